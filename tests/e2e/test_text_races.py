"""Races on text jobs, on PostgreSQL with two server processes: every generation handed out once,
every submit settled once, the balances equal to the ledger.

Issue 38's races fire their calls at once over both servers, 30 rounds each (see tests/e2e/test_races.py):
a cancel against a fault, a submit or pops (after the DELETE answered nothing is handed out, and nothing
handed out after it is charged; what ran before it finishes and is charged, the native cancel's rule), a
fault against submits, faults at a request's last attempt, and first pops of a new worker name."""

from __future__ import annotations

import collections
import functools
import threading
import uuid

import pytest
import requests
from sqlalchemy import func, select

from horde.accounts.models import KudosEntry
from horde.text.models import TextJob, TextRequest
from tests.e2e.test_races import native, outcome
from tests.support.harness import Harness, postgres_servers, unique_model
from tests.support.ledger import assert_balances_match_ledger
from tests.support.races import fire_together

POPPERS = 8
REQUESTS = 6
GENERATIONS = 4
SUBMITTERS = 3
ROUNDS = 30
FIRST_POPS = 6
MAX_BATCH = 20


@pytest.fixture
def two_servers(e2e_database_url):
    if not e2e_database_url.startswith("postgresql"):
        pytest.skip("several server processes are the PostgreSQL path")
    harness = Harness(e2e_database_url, servers=2)
    yield harness
    harness.close()


def _post(url, path, key, body):
    return requests.post(url + "/api/v2" + path, json=body, headers={"apikey": key}, timeout=30)


def test_concurrent_pops_and_double_submits_settle_each_generation_once(two_servers):
    horde, model = two_servers, unique_model("race")
    client_key = horde.user(kudos=10_000)
    owners = [horde.user() for _ in range(2)]
    names = [f"race-{uuid.uuid4().hex[:6]}-{index}" for index in range(POPPERS)]
    pop_bodies = [{"name": name, "models": [model], "threads": 4, "amount": 4} for name in names]
    for index, body in enumerate(pop_bodies):
        _post(horde.servers[index % 2].url, "/generate/text/pop", owners[index % 2], body)
    for index in range(REQUESTS):
        queued = _post(
            horde.servers[index % 2].url,
            "/generate/text/async",
            client_key,
            {"prompt": f"race {index}", "models": [model], "params": {"n": GENERATIONS}},
        )
        assert queued.status_code == 202, queued.text
    claimed, barrier = [], threading.Barrier(POPPERS)

    def popper(index):
        barrier.wait()
        while True:
            answer = _post(
                horde.servers[index % 2].url, "/generate/text/pop", owners[index % 2], pop_bodies[index]
            ).json()
            if not answer.get("ids"):
                return
            claimed.extend((index, job_id) for job_id in answer["ids"])

    threads = [threading.Thread(target=popper, args=(index,)) for index in range(POPPERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    job_ids = [job_id for _, job_id in claimed]
    assert len(job_ids) == len(set(job_ids)) == REQUESTS * GENERATIONS

    outcomes, start = [], threading.Barrier(SUBMITTERS * len(claimed))

    def submitter(index, worker_index, job_id):
        start.wait()
        answer = _post(
            horde.servers[index % 2].url,
            "/generate/text/submit",
            owners[worker_index % 2],
            {"id": job_id, "generation": "x" * 80, "state": "ok"},
        )
        outcomes.append((job_id, answer.status_code, answer.json().get("rc")))

    # Every job submitted SUBMITTERS times at once, all jobs together: one requester is charged concurrently.
    racers = [
        threading.Thread(target=submitter, args=(index, worker_index, job_id))
        for worker_index, job_id in claimed
        for index in range(SUBMITTERS)
    ]
    for racer in racers:
        racer.start()
    for racer in racers:
        racer.join(120)
    accepted = [job_id for job_id, status, _ in outcomes if status == 200]
    assert sorted(accepted) == sorted(job_ids)
    assert {rc for _, status, rc in outcomes if status != 200} == {"DuplicateGen"}
    with horde.runtime.db.read() as session:
        charged = session.scalar(select(func.sum(TextJob.kudos)).where(TextJob.id.in_(job_ids)))
        entries = session.scalar(select(func.count(KudosEntry.id)).where(KudosEntry.kind == "charge"))
    assert_balances_match_ledger(horde.runtime.db)
    assert entries == REQUESTS * GENERATIONS
    paid = requests.get(horde.url + "/api/v2/find_user", headers={"apikey": client_key}, timeout=5).json()["kudos"]
    assert paid == 10_000 - charged


# -- Transitions of one request raced across the two processes (issue 38): cancel, fault, submit and pop.


@pytest.fixture(scope="module")
def racing():
    with postgres_servers() as harness:
        yield harness


class TextBench:
    """One text worker of one owner, and a requester, on a model of their own; every call names the server
    (by index) it goes to."""

    def __init__(self, horde: Harness):
        self.horde = horde
        self.model = unique_model("text-race")
        self.owner = horde.user()
        self.requester = horde.user(kudos=1_000_000)
        self.declaration = {
            "name": f"text-race-{uuid.uuid4().hex[:8]}",
            "models": [self.model],
            "threads": 50,
            "amount": MAX_BATCH,
            "max_length": 512,
            "max_context_length": 4096,
        }
        self.pop()

    def server(self, index: int):
        return self.horde.servers[index % len(self.horde.servers)]

    def queue(self, n: int, index: int = 0) -> str:
        return self.queue_for([self.model], n, index)

    def queue_for(self, models: list[str], n: int, index: int = 0) -> str:
        body = {"prompt": "race", "models": models, "params": {"n": n, "max_length": 64}}
        response = native(self.server(index), "POST", "/generate/text/async", self.requester, body)
        assert response.status_code == 202, response.text
        return response.json()["id"]

    def pop_call(self, index: int = 0):
        return functools.partial(native, self.server(index), "POST", "/generate/text/pop", self.owner, self.declaration)

    def pop(self, index: int = 0) -> list[str]:
        response = self.pop_call(index)()
        assert response.status_code == 200, response.text
        return response.json()["ids"]

    def submit_call(self, job_id: str, index: int, state: str = "ok"):
        body = {"id": job_id, "generation": "x" * 40 if state == "ok" else "", "state": state}
        return functools.partial(native, self.server(index), "POST", "/generate/text/submit", self.owner, body)

    def fault_call(self, job_id: str, index: int):
        return self.submit_call(job_id, index, state="faulted")

    def cancel_call(self, request_id: str, index: int):
        return functools.partial(
            native, self.server(index), "DELETE", f"/generate/text/status/{request_id}", self.requester
        )

    def running(self, n: int) -> tuple[str, list[str]]:
        """A request of `n` generations, every one handed out (running)."""
        request_id = self.queue(n)
        job_ids = self.pop(1)
        assert len(job_ids) == n
        return request_id, job_ids


def _handed_out_after(bench: TextBench) -> list[str]:
    """What pops on both servers hand out now: nothing may be left of a request that ended or was cancelled."""
    return [job_id for index in range(2) for job_id in bench.pop(index)]


def _charges(horde: Harness, request_id: str) -> list[int]:
    with horde.runtime.db.read() as session:
        return list(
            session.scalars(
                select(KudosEntry.amount).where(KudosEntry.request_id == request_id, KudosEntry.kind == "charge")
            )
        )


def _request(horde: Harness, request_id: str) -> TextRequest:
    with horde.runtime.db.read() as session:
        return session.get_one(TextRequest, request_id)


def _submitted_jobs(horde: Harness, request_id: str) -> list[str]:
    with horde.runtime.db.read() as session:
        return list(
            session.scalars(select(TextJob.id).where(TextJob.request_id == request_id, TextJob.state == "submitted"))
        )


def _settle_after_cancel(bench: TextBench, request_id: str, before: list[str], tally) -> None:
    """After the DELETE answered: no pop hands out a generation (a late one is submitted, to see it charged), the
    generations running before it finish and are charged (the native cancel's rule), each once; the request ends
    cancelled with its counters at zero."""
    late = _handed_out_after(bench)
    if late:
        tally["handed out after the DELETE answered"] += 1
    charged_late = [job_id for job_id in late if outcome(bench.submit_call(job_id, 0)()) == "200"]
    if charged_late:
        tally["charged after the DELETE answered"] += 1
    for job_id in before:
        assert outcome(bench.submit_call(job_id, 1)()) in ("200", "AbortedGen", "DuplicateGen")
    row = _request(bench.horde, request_id)
    submitted = _submitted_jobs(bench.horde, request_id)
    charges = _charges(bench.horde, request_id)
    assert len(charges) == len(submitted) and -sum(charges) == row.kudos_charged
    if (row.state, row.waiting, row.processing) != ("cancelled", 0, 0):
        tally[f"left {row.state} with {row.waiting} waiting, {row.processing} running"] += 1


@pytest.mark.parametrize("ending", ["fault", "submit"])
def test_cancel_racing_the_end_of_a_generation_hands_out_nothing_after_the_delete(racing, ending):
    """A worker faults (or submits) one of two running generations on one server while the requester cancels on
    the other. A fault must not put the generation back in the queue of a cancelled request (issue 38: handed
    out again in 53 of 60 rounds); the other generation, running at the cancel, finishes and is charged."""
    bench, tally = TextBench(racing), collections.Counter()
    for _ in range(ROUNDS):
        request_id, job_ids = bench.running(2)
        end = bench.fault_call(job_ids[0], 0) if ending == "fault" else bench.submit_call(job_ids[0], 0)
        ended, cancelled = fire_together([end, bench.cancel_call(request_id, 1)])
        assert (outcome(ended), outcome(cancelled)) == ("200", "200")
        _settle_after_cancel(bench, request_id, job_ids[1:], tally)
        tally["rounds"] += 1
    assert_balances_match_ledger(racing.runtime.db)
    print(f"\n{ROUNDS} rounds of cancel against {ending}: {dict(tally)}")
    assert set(tally) == {"rounds"}


def test_cancel_racing_pops_hands_out_nothing_after_the_delete(racing):
    """Pops on both servers while the requester cancels: what they took before the cancel is charged when
    submitted, and nothing is handed out after it."""
    bench, tally, taken_counts = TextBench(racing), collections.Counter(), collections.Counter()
    for _ in range(ROUNDS):
        request_id = bench.queue(4)
        answers = fire_together(
            [bench.pop_call(0), bench.pop_call(1), bench.cancel_call(request_id, 0), bench.pop_call(1)]
        )
        assert [outcome(answer) for answer in answers] == ["200"] * 4
        taken = [job_id for index in (0, 1, 3) for job_id in answers[index].json()["ids"]]
        assert len(taken) == len(set(taken)) <= 4
        _settle_after_cancel(bench, request_id, taken, tally)
        assert len(_submitted_jobs(racing, request_id)) == len(taken)
        taken_counts[len(taken)] += 1
        tally["rounds"] += 1
    assert_balances_match_ledger(racing.runtime.db)
    print(
        f"\n{ROUNDS} rounds of cancel against pops: {dict(tally)}; generations taken in the race: {dict(taken_counts)}"
    )
    assert set(tally) == {"rounds"}


def test_fault_racing_submits_of_one_request_ends_each_generation_once(racing):
    """A fault and a submit of one generation, and the submit of the other, on both servers at once: one of the
    first two wins; a faulted generation waits again and is served; each generation is charged once."""
    bench, tally = TextBench(racing), collections.Counter()
    for _ in range(ROUNDS):
        request_id, (first, second) = bench.running(2)
        faulted, submitted, other = fire_together(
            [bench.fault_call(first, 0), bench.submit_call(first, 1), bench.submit_call(second, 0)]
        )
        assert outcome(other) == "200"
        fault_won = outcome(submitted) == "AbortedGen"
        tally["fault won" if fault_won else "submit won"] += 1
        assert outcome(faulted) == "200" and outcome(submitted) in ("200", "AbortedGen")
        again = _handed_out_after(bench)
        assert len(again) == (1 if fault_won else 0), again
        for job_id in again:
            assert outcome(bench.submit_call(job_id, 1)()) == "200"
        row = _request(racing, request_id)
        charges = _charges(racing, request_id)
        assert (row.state, row.finished, row.waiting, row.processing) == ("done", 2, 0, 0)
        assert row.restarted == (1 if fault_won else 0)
        assert len(charges) == 2 and -sum(charges) == row.kudos_charged
    assert_balances_match_ledger(racing.runtime.db)
    print(f"\n{ROUNDS} rounds of fault against submits: {dict(tally)}")


def test_faults_of_a_last_attempt_racing_each_other_and_a_submit_answer_every_call(racing):
    """At a request's last attempt, the faults of both its running generations and a submit of one, at once: the
    first fault ends the request and its other generation, the others find it ended; no call fails (a fault and
    a submit that locked their rows in opposite orders would deadlock, a 500)."""
    bench, tally = TextBench(racing), collections.Counter()
    max_attempts = racing.runtime.settings.max_attempts
    for _ in range(ROUNDS):
        request_id = bench.queue(2)
        running = bench.pop(0)
        for _ in range(max_attempts * 2 - 1):  # fault one generation after another, up to the last attempt
            assert outcome(bench.fault_call(running.pop(0), 1)()) == "200"
            running += bench.pop(0)
        first, second = running
        answers = fire_together([bench.fault_call(first, 0), bench.fault_call(second, 1), bench.submit_call(second, 0)])
        outcomes = [outcome(answer) for answer in answers]
        tally[", ".join(sorted(outcomes))] += 1
        for left in [first, second, *_handed_out_after(bench)]:  # a call that failed left its generation running
            bench.fault_call(left, 0)()
        row = _request(racing, request_id)
        assert row.state in ("faulted", "done") and (row.waiting, row.processing) == (0, 0)
        assert -sum(_charges(racing, request_id)) == row.kudos_charged
    assert_balances_match_ledger(racing.runtime.db)
    print(f"\n{ROUNDS} rounds of two faults and a submit at the last attempt: {dict(tally)}")
    assert all(set(outcomes.split(", ")) <= {"200", "AbortedGen"} for outcomes in tally)


def test_simultaneous_first_text_pops_of_a_new_worker_name_all_answer_200(racing):
    """Issue 38: four simultaneous first text pops of a new name gave 13 × 500 in 20 rounds (UniqueViolation on
    workers_name_key): the text check-in inserts the name as chat's does, ignoring a concurrent first insert."""
    owner, model, tally = racing.user(), unique_model("text-first"), collections.Counter()
    for _ in range(ROUNDS):
        body = {"name": f"text-new-{uuid.uuid4().hex[:8]}", "models": [model]}
        answers = fire_together(
            [
                functools.partial(native, racing.servers[index % 2], "POST", "/generate/text/pop", owner, body)
                for index in range(FIRST_POPS)
            ]
        )
        outcomes = [outcome(answer) for answer in answers]
        tally[", ".join(sorted(outcomes))] += 1
    print(f"\n{ROUNDS} rounds of {FIRST_POPS} simultaneous first text pops of a new name: {dict(tally)}")
    assert set(tally) == {", ".join(["200"] * FIRST_POPS)}


def test_workers_of_two_models_popping_a_request_of_both_take_each_generation_once(racing):
    """A pop locks the model row it walks to (horde/text/take.py): workers of two models of one request hold
    different rows, and the request's compare-and-set gives each generation to one of them. Pops on both servers,
    for a request of both models and one of any model at once, with a third worker's pop between."""
    bench, tally = TextBench(racing), collections.Counter()
    other = {**bench.declaration, "name": f"text-race-{uuid.uuid4().hex[:8]}", "models": [unique_model("other")]}
    native(bench.server(1), "POST", "/generate/text/pop", bench.owner, other)
    pops = [
        functools.partial(native, bench.server(index), "POST", "/generate/text/pop", bench.owner, declaration)
        for index, declaration in ((0, bench.declaration), (1, other), (0, other), (1, bench.declaration))
    ]
    for _ in range(ROUNDS):
        n = 2
        both = bench.queue_for([bench.model, other["models"][0]], n)
        any_model = bench.queue_for([], 1, index=1)
        answers = fire_together(pops)
        assert [outcome(answer) for answer in answers] == ["200"] * len(pops)
        taken = [job_id for answer in answers for job_id in answer.json()["ids"]]
        assert len(taken) == len(set(taken)) == n + 1, answers
        for request_id, generations in ((both, n), (any_model, 1)):
            status = native(bench.server(0), "GET", f"/generate/text/status/{request_id}", bench.requester).json()
            assert (status["waiting"], status["processing"]) == (0, generations)
        for index, job_id in enumerate(taken):
            assert outcome(bench.submit_call(job_id, index)()) == "200"
        tally["rounds"] += 1
    assert_balances_match_ledger(racing.runtime.db)
    assert tally["rounds"] == ROUNDS
