"""The worker loop over real HTTP against a fake Horde: pop, progress, submit, fault, stop."""

import threading
import time

import pytest

from horde.bridge import client as bridge_client
from horde.bridge.backends.scripted import ScriptedBackend
from horde.bridge.client import HordeClient
from horde.bridge.declarations import Declarations
from horde.bridge.loop import SHUTDOWN_REASON, WorkerLoop
from horde.bridge.rules import parse_rules
from horde.protocol import FEATURES
from tests.support.fake_horde import WORKER_KEY, FakeHorde

MODEL = "test/model"


@pytest.fixture
def horde():
    fake = FakeHorde().start()
    yield fake
    fake.stop()


class RunningLoop:
    def __init__(self, horde, backend, *, threads=1, key=WORKER_KEY, features=FEATURES, **options):
        client = HordeClient(horde.url, key, threading.Event())
        declarations = Declarations(
            name="test-worker",
            models=[MODEL],
            max_length=512,
            max_context_length=4096,
            threads=threads,
            features=list(features),
            guarantees=["prompt_fit"],
            limits={"max_temperature_with_tools": 0.7},
        )
        options.setdefault("wait_s", 0.5)
        options.setdefault("progress_interval_s", 0.05)
        self.loop = WorkerLoop(client, backend, declarations, **options)
        self.exit_code = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        self.exit_code = self.loop.run()

    def stop(self, timeout_s=10.0):
        self.loop.request_stop()
        self.thread.join(timeout_s)
        assert not self.thread.is_alive(), "the loop did not stop"
        return self.exit_code


def scripted(*rules):
    return ScriptedBackend(parse_rules({"rules": list(rules)}))


def user(text):
    return {"messages": [{"role": "user", "content": text}], "max_tokens": 64}


def test_pop_declares_and_progress_then_submit(horde):
    job_id = horde.add_job(user("tell me"))
    running = RunningLoop(
        horde,
        scripted(
            {
                "match": {},
                "reply": {
                    "reasoning_content": "hmm",
                    "content": "told: {last_user}",
                    "progress_steps": 3,
                    "progress_interval_s": 0.05,
                },
            }
        ),
    )
    assert horde.wait_for(lambda: horde.settled(job_id))
    assert running.stop() == 0
    pop = horde.pops[0]
    assert pop["name"] == "test-worker" and pop["models"] == [MODEL] and pop["threads"] == 1
    assert pop["features"] == list(FEATURES) and pop["guarantees"] == ["prompt_fit"]
    assert pop["limits"] == {"max_temperature_with_tools": 0.7} and pop["wait"] == 0.5
    assert pop["bridge_agent"].startswith("horde-reference-worker:1:")
    posts = [p for p in horde.progress if p["id"] == job_id]
    assert len(posts) == 3
    assert posts[-1] == {"id": job_id, "content": "told: tell me", "reasoning_content": "hmm"}
    (submit,) = horde.submits
    assert submit["id"] == job_id and submit["content"] == "told: tell me"
    assert submit["reasoning_content"] == "hmm" and submit["finish_reason"] == "stop"
    assert submit["usage"]["completion_tokens"] >= 1
    assert horde.faults == []


def test_no_progress_posts_without_the_feature(horde):
    job_id = horde.add_job(user("x"))
    running = RunningLoop(
        horde,
        scripted({"match": {}, "reply": {"content": "abc", "progress_steps": 2, "progress_interval_s": 0.01}}),
        features=["tools"],
    )
    assert horde.wait_for(lambda: horde.settled(job_id))
    running.stop()
    assert horde.progress == [] and len(horde.submits) == 1


class ExplodingBackend:
    def generate(self, job, ctx):
        raise RuntimeError("HTTP 500 from the model server")


def test_a_backend_exception_is_faulted_with_its_reason(horde):
    job_id = horde.add_job(user("x"))
    running = RunningLoop(horde, ExplodingBackend())
    assert horde.wait_for(lambda: horde.settled(job_id))
    running.stop()
    assert horde.faults == [{"id": job_id, "reason": "backend error: HTTP 500 from the model server"}]
    assert horde.submits == []


def test_a_scripted_fault_and_a_malformed_job_are_faulted(horde):
    faulty = horde.add_job(user("please fail"))
    malformed = horde.add_job({"prompt": "no messages"})
    running = RunningLoop(
        horde,
        scripted(
            {"match": {"contains": "fail"}, "reply": {"fault": "scripted fault"}},
            {"match": {}, "reply": {"content": "ok"}},
        ),
    )
    assert horde.wait_for(lambda: horde.settled(faulty) and horde.settled(malformed))
    running.stop()
    reasons = {f["id"]: f["reason"] for f in horde.faults}
    assert reasons[faulty] == "scripted fault"
    assert reasons[malformed].startswith("malformed job")


def test_cancel_on_progress_answer_stops_without_submit(horde):
    job_id = horde.add_job(user("long story"))
    horde.cancel_ids.add(job_id)
    running = RunningLoop(
        horde,
        scripted(
            {"match": {}, "reply": {"content": "a long story " * 20, "progress_steps": 10, "progress_interval_s": 0.05}}
        ),
    )
    assert horde.wait_for(lambda: len(horde.progress) >= 1)
    running.stop()  # waits for the job: one that went on would post its other nine steps first
    assert len(horde.progress) == 1
    assert horde.submits == [] and horde.faults == []


def test_never_more_jobs_in_flight_than_threads(horde):
    ids = [horde.add_job(user(f"job {i}")) for i in range(5)]
    started = time.monotonic()
    running = RunningLoop(horde, scripted({"match": {}, "reply": {"content": "done", "delay_s": 0.4}}), threads=2)
    assert horde.wait_for(lambda: all(horde.settled(i) for i in ids), timeout_s=15)
    elapsed = time.monotonic() - started
    running.stop()
    assert horde.max_active == 2
    assert len(horde.submits) == 5
    assert elapsed < 5 * 0.4  # two at a time, not one after the other


def test_submit_retries_transient_errors_but_not_refusals(horde, monkeypatch):
    monkeypatch.setattr(bridge_client, "BACKOFF_FIRST_S", 0.05)  # the retries' pauses, 0.5 s and 1 s, a tenth of that
    retried = horde.add_job(user("a"))
    refused = horde.add_job(user("b"))
    horde.submit_errors[retried] = [(503, {"message": "busy", "rc": "ServiceUnavailable"})] * 2
    horde.submit_errors[refused] = [(400, {"message": "content is not JSON", "rc": "ChatSubmitNonconformant"})]
    running = RunningLoop(horde, scripted({"match": {}, "reply": {"content": "ok"}}))
    assert horde.wait_for(lambda: horde.settled(retried), timeout_s=15)
    assert horde.wait_for(lambda: sum(a["id"] == refused for a in horde.submit_attempts) == 1)
    running.stop()  # waits for the refused job's thread: a retry of its submit would come before it ends
    attempts = [a["id"] for a in horde.submit_attempts]
    assert attempts.count(retried) == 3 and attempts.count(refused) == 1
    assert [s["id"] for s in horde.submits] == [retried]


def test_pop_retries_server_errors(horde):
    horde.pop_errors = [(500, {"message": "db down", "rc": "InternalServerError"})]
    job_id = horde.add_job(user("x"))
    running = RunningLoop(horde, scripted({"match": {}, "reply": {"content": "ok"}}))
    assert horde.wait_for(lambda: horde.settled(job_id))
    running.stop()
    assert len(horde.pops) >= 2 and len(horde.submits) == 1


def test_a_refused_worker_exits_with_an_error(horde):
    running = RunningLoop(horde, scripted({"match": {}, "reply": {"content": "ok"}}), key="wrong")
    running.thread.join(5)
    assert running.exit_code == 1


def test_max_jobs_ends_the_loop(horde):
    for i in range(3):
        horde.add_job(user(str(i)))
    running = RunningLoop(horde, scripted({"match": {}, "reply": {"content": "ok"}}), max_jobs=2)
    running.thread.join(10)
    assert running.exit_code == 0
    assert len(horde.submits) == 2 and horde.jobs.qsize() == 1


def test_stop_lets_a_short_job_finish(horde):
    job_id = horde.add_job(user("x"))
    running = RunningLoop(
        horde, scripted({"match": {}, "reply": {"content": "finished", "delay_s": 0.5}}), shutdown_grace_s=5
    )
    assert horde.wait_for(lambda: job_id in horde.active)
    assert running.stop() == 0
    assert [s["content"] for s in horde.submits] == ["finished"] and horde.faults == []


def test_stop_faults_a_job_that_outlives_the_grace(horde):
    job_id = horde.add_job(user("x"))
    running = RunningLoop(
        horde, scripted({"match": {}, "reply": {"content": "never", "delay_s": 30}}), shutdown_grace_s=0.3
    )
    assert horde.wait_for(lambda: job_id in horde.active)
    started = time.monotonic()
    assert running.stop() == 0
    assert time.monotonic() - started < 3
    assert horde.faults == [{"id": job_id, "reason": SHUTDOWN_REASON}] and horde.submits == []


def test_a_submit_asks_for_the_next_job_and_the_same_slot_runs_it(horde):
    ids = [horde.add_job(user(f"job {i}")) for i in range(3)]
    running = RunningLoop(horde, scripted({"match": {}, "reply": {"content": "done"}}))
    assert horde.wait_for(lambda: all(horde.settled(i) for i in ids))
    running.stop()
    assert horde.handed_by_submit == ids[1:]
    assert [s["id"] for s in horde.submits] == ids
    assert all(s["pop"]["name"] == "test-worker" and s["pop"]["wait"] == 0 for s in horde.submits)
    assert horde.max_active == 1


def test_an_older_horde_refusing_pop_gets_each_reply_alone(horde):
    horde.refuse_submit_pop = True
    ids = [horde.add_job(user(f"job {i}")) for i in range(2)]
    running = RunningLoop(horde, scripted({"match": {}, "reply": {"content": "done"}}))
    assert horde.wait_for(lambda: all(horde.settled(i) for i in ids))
    running.stop()
    assert [("pop" in a, a["id"]) for a in horde.submit_attempts] == [(True, ids[0]), (False, ids[0]), (False, ids[1])]
    assert horde.handed_by_submit == [] and len(horde.submits) == 2


def test_max_jobs_counts_the_jobs_a_submit_brought(horde):
    ids = [horde.add_job(user(str(i))) for i in range(3)]
    running = RunningLoop(horde, scripted({"match": {}, "reply": {"content": "ok"}}), max_jobs=2)
    running.thread.join(10)
    assert running.exit_code == 0
    assert [s["id"] for s in horde.submits] == ids[:2] and horde.jobs.qsize() == 1
    assert ["pop" in s for s in horde.submits] == [True, False]
