"""Races on text jobs, on PostgreSQL with two server processes: every generation handed out once,
every submit settled once, the balances equal to the ledger."""

from __future__ import annotations

import threading
import uuid

import pytest
import requests
from sqlalchemy import func, select

from horde_testing.ledger import assert_balances_match_ledger
from tests.e2e.conftest import Harness, unique_model

POPPERS = 8
REQUESTS = 6
GENERATIONS = 4
SUBMITTERS = 3


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
    from horde.accounts.models import KudosEntry
    from horde.text.models import TextJob

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
