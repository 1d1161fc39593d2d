"""Races run for real: two server processes on one PostgreSQL database, calls fired at the same moment.

SQLite's single writer would hide every one of these, so they run on PostgreSQL only. Each round fires its
calls from threads behind one barrier, alternating between the two servers (and, for cancels, the test's own
process), then checks what the database holds: each job settled once, each request charged once, the
reservation kept, and every balance equal to its ledger entries.
"""

from __future__ import annotations

import collections
import functools
import uuid

import pytest
import requests
from sqlalchemy import select

from horde.accounts.models import KudosEntry
from horde.chat import pricing, service
from horde.chat.models import ChatRequest
from tests.support.harness import Harness, postgres_servers, unique_model
from tests.support.ledger import assert_balances_match_ledger
from tests.support.native import declaration
from tests.support.races import fire_together

ROUNDS = 30
SUBMIT_STORM_ROUNDS = 3
HTTP_TIMEOUT_S = 30
#: As many models as a declaration may name (the chat and text pop schemas): the longest INSERT of known models.
MODELS_PER_DECLARATION = {"chat": 100, "text": 20}
LONG_REPLY = {"content": "y" * 4000, "usage": {"completion_tokens": 1000}}


@pytest.fixture(scope="module")
def horde():
    with postgres_servers() as harness:
        yield harness


def native(server, method: str, path: str, key: str, body: dict | None = None) -> requests.Response:
    return requests.request(
        method, f"{server.url}/api/v2{path}", json=body, headers={"apikey": key}, timeout=HTTP_TIMEOUT_S
    )


def outcome(response) -> str:
    """'200' or the refusal's rc; an exception (a dropped connection) is its type name."""
    if isinstance(response, Exception):
        return type(response).__name__
    return "200" if response.status_code in (200, 202) else response.json().get("rc", str(response.status_code))


class Bench:
    """One worker of one owner, and a requester, on a model of their own."""

    def __init__(self, horde: Harness, *, kudos: int = 100_000, **declared):
        self.horde = horde
        self.model = unique_model("race")
        self.owner = horde.user()
        self.requester = horde.user(kudos=kudos)
        self.declaration = declaration(f"race-{uuid.uuid4().hex[:8]}", models=[self.model], threads=50, **declared)
        self.pop()

    def server(self, index: int):
        return self.horde.servers[index % len(self.horde.servers)]

    def pop(self, index: int = 0) -> str | None:
        response = native(self.server(index), "POST", "/generate/chat/pop", self.owner, self.declaration)
        assert response.status_code == 200, response.text
        return response.json()["id"]

    def queue(self, index: int = 0, **body) -> str:
        body = {"model": self.model, "messages": [{"role": "user", "content": "Hello"}], "max_tokens": 64, **body}
        response = native(self.server(index), "POST", "/generate/chat/async", self.requester, body)
        assert response.status_code == 202, response.text
        return response.json()["id"]

    def running_job(self, **body) -> tuple[str, str]:
        request_id = self.queue(**body)
        job_id = self.pop(1)
        assert job_id is not None
        return request_id, job_id

    def submit(self, job_id: str, index: int, reply: dict | None = None):
        return functools.partial(
            native,
            self.server(index),
            "POST",
            "/generate/chat/submit",
            self.owner,
            {"id": job_id, **(reply or {"content": "Hi there"})},
        )


def entries(horde: Harness, request_id: str) -> dict[str, list[int]]:
    with horde.runtime.db.read() as session:
        rows = session.execute(
            select(KudosEntry.kind, KudosEntry.amount).where(KudosEntry.request_id == request_id)
        ).all()
    found = collections.defaultdict(list)
    for kind, amount in rows:
        found[kind].append(amount)
    return dict(found)


def request_row(horde: Harness, request_id: str) -> ChatRequest:
    with horde.runtime.db.read() as session:
        return session.get(ChatRequest, request_id)


def test_simultaneous_submits_of_one_job_settle_it_once(horde):
    bench = Bench(horde)
    tally = collections.Counter()
    for _ in range(ROUNDS):
        request_id, job_id = bench.running_job()
        answers = fire_together([bench.submit(job_id, index) for index in range(4)])
        outcomes = sorted(outcome(answer) for answer in answers)
        tally[", ".join(outcomes)] += 1
        assert outcomes == ["200", "DuplicateGen", "DuplicateGen", "DuplicateGen"]
        reward = next(answer.json()["reward"] for answer in answers if answer.status_code == 200)
        assert entries(horde, request_id) == {"charge": [-reward], "reward": [reward]}
        row = request_row(horde, request_id)
        assert (row.state, row.kudos_charged) == ("done", reward)
    assert_balances_match_ledger(horde.runtime.db)
    print(f"\n{ROUNDS} rounds of 4 simultaneous submits of one job over two servers: {dict(tally)}")


def test_submit_racing_a_fault_ends_the_job_once(horde):
    bench = Bench(horde)
    tally = collections.Counter()
    for _ in range(ROUNDS):
        request_id, job_id = bench.running_job()
        fault = functools.partial(
            native, bench.server(1), "POST", "/generate/chat/fault", bench.owner, {"id": job_id, "reason": "raced"}
        )
        submitted, faulted = fire_together([bench.submit(job_id, 0), fault])
        row = request_row(horde, request_id)
        if outcome(submitted) == "200":
            tally["submit won"] += 1
            assert outcome(faulted) == "DuplicateGen"
            reward = submitted.json()["reward"]
            assert row.state == "done" and entries(horde, request_id) == {"charge": [-reward], "reward": [reward]}
        else:
            tally["fault won"] += 1
            assert (outcome(submitted), outcome(faulted)) == ("AbortedGen", "200")
            assert row.state == "waiting" and entries(horde, request_id) == {}
            native(bench.server(0), "DELETE", f"/generate/chat/status/{request_id}", bench.requester)
    assert_balances_match_ledger(horde.runtime.db)
    print(f"\n{ROUNDS} rounds of submit against fault: {dict(tally)}")


def test_cancel_racing_submit_charges_what_the_end_state_says(horde):
    """A native cancel (no charge) on one server, a stream's cancel (charging 400 streamed characters) in this
    process and the submit of a long reply on the other server, all at once: the request ends done and charged
    for its reply, or cancelled and charged at most for the streamed part; never both."""
    bench = Bench(horde)
    streamed_chars = 400
    tally = collections.Counter()
    for _ in range(ROUNDS):
        request_id, job_id = bench.running_job(max_tokens=2000)
        progress = native(
            bench.server(0),
            "POST",
            "/generate/chat/progress",
            bench.owner,
            {"id": job_id, "content": "y" * streamed_chars},
        )
        assert progress.json() == {"cancel": False}
        native_cancel = functools.partial(
            native, bench.server(0), "DELETE", f"/generate/chat/status/{request_id}", bench.requester
        )
        stream_cancel = functools.partial(
            service.cancel, horde.runtime, None, request_id, streamed_chars=streamed_chars
        )
        submitted, _, _ = fire_together([bench.submit(job_id, 1, LONG_REPLY), native_cancel, stream_cancel])
        row = request_row(horde, request_id)
        charged = entries(horde, request_id)
        if row.state == "done":
            reward = submitted.json()["reward"]
            assert charged == {"charge": [-reward], "reward": [reward]} and row.kudos_charged == reward
            tally["done, charged for the reply"] += 1
        else:
            assert row.state == "cancelled" and outcome(submitted) == "AbortedGen"
            assert charged in ({}, {"charge": [-row.kudos_charged], "reward": [row.kudos_charged]})
            if charged:
                assert row.kudos_charged == pricing.price(
                    bench.model, completion_tokens=streamed_chars // 4, prompt_tokens=row.prompt_tokens
                )
                tally["cancelled, charged for the streamed part"] += 1
            else:
                tally["cancelled, not charged"] += 1
    assert_balances_match_ledger(horde.runtime.db)
    print(f"\n{ROUNDS} rounds of submit against two cancels: {dict(tally)}")


def test_concurrent_admissions_keep_the_reservation(horde):
    """Six requests above the free allowance, at once, from a user whose kudos cover one: one is admitted."""
    bench = Bench(horde, kudos=0, max_length=8192, max_context_length=16384)
    body = {
        "model": bench.model,
        "messages": [{"role": "user", "content": "Hello"}],
        "max_tokens": 8000,
        "availability_mode": "wait",
    }
    probe = native(bench.server(0), "POST", "/generate/chat/async", bench.requester, body)
    assert probe.json()["rc"] == "KudosUpfront"
    estimate = probe.json()["metadata"]["kudos_estimate"]
    tally = collections.Counter()
    for _ in range(ROUNDS):
        requester = horde.user(kudos=estimate + estimate // 2)
        answers = fire_together(
            [
                functools.partial(native, bench.server(index), "POST", "/generate/chat/async", requester, body)
                for index in range(6)
            ]
        )
        outcomes = sorted(outcome(answer) for answer in answers)
        tally[", ".join(outcomes)] += 1
        assert outcomes == ["200"] + ["KudosUpfront"] * 5
        admitted = next(answer.json()["id"] for answer in answers if answer.status_code == 202)
        native(bench.server(1), "DELETE", f"/generate/chat/status/{admitted}", requester)
    print(f"\n{ROUNDS} rounds of 6 simultaneous admissions covered once: {dict(tally)}")


def test_concurrent_first_pops_of_a_new_worker_name_all_succeed(horde):
    owner = horde.user()
    model = unique_model("race")
    tally = collections.Counter()
    for _ in range(ROUNDS):
        body = declaration(f"new-{uuid.uuid4().hex[:8]}", models=[model])
        answers = fire_together(
            [
                functools.partial(native, horde.servers[index % 2], "POST", "/generate/chat/pop", owner, body)
                for index in range(6)
            ]
        )
        outcomes = [outcome(answer) for answer in answers]
        tally[", ".join(sorted(outcomes))] += 1
        assert outcomes == ["200"] * 6
    print(f"\n{ROUNDS} rounds of 6 simultaneous first pops of a new name: {dict(tally)}")


@pytest.mark.parametrize("kind", ["chat", "text"])
def test_first_pops_declaring_the_same_new_models_all_succeed_and_record_each_once(horde, kind):
    """Each first pop records the models it is the first to declare (known_models, known_text_models) in its own
    transaction, on either process: every pop succeeds and each model is recorded. Half the pops declare them in
    the reverse order; the records are written in name order, so that no two pops could wait on each other's rows
    in a cycle (a window too narrow to reach here: without that order these rounds pass as well)."""
    from horde.text.models import KnownTextModel
    from horde.workers.models import KnownModel

    owner, table = horde.user(), {"chat": KnownModel, "text": KnownTextModel}[kind]
    tally = collections.Counter()
    for _ in range(ROUNDS):
        models = [unique_model(f"order-{index}") for index in range(MODELS_PER_DECLARATION[kind])]
        bodies = [
            declaration(f"order-{uuid.uuid4().hex[:8]}", models=models if index % 2 else models[::-1])
            for index in range(6)
        ]
        if kind == "text":  # the text pop's declaration has no features or guarantees
            bodies = [{k: v for k, v in body.items() if k not in ("features", "guarantees")} for body in bodies]
        answers = fire_together(
            [
                functools.partial(native, horde.servers[index % 2], "POST", f"/generate/{kind}/pop", owner, body)
                for index, body in enumerate(bodies)
            ]
        )
        outcomes = [outcome(answer) for answer in answers]
        tally[", ".join(sorted(outcomes))] += 1
        assert outcomes == ["200"] * 6
        with horde.runtime.db.read() as session:
            assert set(session.scalars(select(table.name).where(table.name.in_(models)))) == set(models)
    print(f"\n{ROUNDS} rounds of 6 simultaneous {kind} first pops, models in opposite orders: {dict(tally)}")


def test_many_simultaneous_submits_keep_every_balance_equal_to_its_entries(horde):
    """Twenty jobs of one requester, served by two owners' workers, submitted at once over two servers."""
    first, second = Bench(horde, kudos=0), Bench(horde, kudos=0)
    second.requester = first.requester
    tally = collections.Counter()
    for _ in range(SUBMIT_STORM_ROUNDS):
        jobs = []
        for index in range(10):
            for bench in (first, second):
                bench.queue(index)
                jobs.append((bench, bench.pop(index + 1)))
        answers = fire_together([bench.submit(job_id, index) for index, (bench, job_id) in enumerate(jobs)])
        tally[", ".join(sorted({outcome(answer) for answer in answers}))] += 1
        assert all(outcome(answer) == "200" for answer in answers)
        assert_balances_match_ledger(horde.runtime.db)
    print(f"\n{SUBMIT_STORM_ROUNDS} rounds of 20 simultaneous submits of one requester's jobs: {dict(tally)}")


def test_submits_that_pop_and_plain_pops_at_once_give_each_job_once(horde):
    """Six slots submit their job and pop the next in one call while six others pop plainly, over two servers,
    with six requests waiting: no job (and no request) is given twice, and every request is settled once."""
    bench = Bench(horde)
    racers = 6
    tally = collections.Counter()
    for _ in range(ROUNDS):
        requests_ = [bench.queue(index) for index in range(2 * racers)]
        held = [bench.pop(index) for index in range(racers)]
        submits = [
            bench.submit(job_id, index, {"content": "Hi there", "pop": bench.declaration})
            for index, job_id in enumerate(held)
        ]
        pops = [
            functools.partial(native, bench.server(index), "POST", "/generate/chat/pop", bench.owner, bench.declaration)
            for index in range(racers)
        ]
        answers = fire_together(submits + pops)
        assert [outcome(answer) for answer in answers] == ["200"] * len(answers)
        given = [answer.json()["next"]["id"] for answer in answers[:racers]]
        given += [answer.json()["id"] for answer in answers[racers:]]
        handed = [job_id for job_id in given if job_id is not None]
        assert len(handed) == len(set(handed))
        tally[f"{sum(job is not None for job in given[:racers])} by submit, {len(handed)} in all"] += 1
        for index, job_id in enumerate(handed):
            assert outcome(bench.submit(job_id, index)()) == "200"
        while (left := bench.pop()) is not None:
            assert outcome(bench.submit(left, 0)()) == "200"
        for request_id in requests_:
            row = request_row(horde, request_id)
            assert (row.state, row.attempts) == ("done", 1)
            assert entries(horde, request_id) == {"charge": [-row.kudos_charged], "reward": [row.kudos_charged]}
    assert_balances_match_ledger(horde.runtime.db)
    print(f"\n{ROUNDS} rounds of {racers} submits with pop against {racers} pops: {dict(tally)}")
