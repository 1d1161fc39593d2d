"""Races on text jobs, on PostgreSQL with two server processes: every generation handed out once,
every submit settled once, the balances equal to the ledger.

Issue 38's races fire their calls at once over both servers, 30 rounds each (see tests/e2e/test_races.py):
first pops of a new worker name."""

from __future__ import annotations

import collections
import functools
import threading
import uuid

import pytest
import requests
from sqlalchemy import func, select

from horde.accounts.models import KudosEntry
from horde.text.models import TextJob
from horde_testing.ledger import assert_balances_match_ledger
from horde_testing.races import fire_together
from tests.e2e.test_races import native, outcome
from tests.support.harness import Harness, postgres_servers, unique_model

POPPERS = 8
REQUESTS = 6
GENERATIONS = 4
SUBMITTERS = 3
ROUNDS = 30
FIRST_POPS = 6


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


# -- Issue 38's races, across the two processes.


@pytest.fixture(scope="module")
def racing():
    with postgres_servers() as harness:
        yield harness


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
