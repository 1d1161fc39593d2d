"""Claiming is safe under concurrency: never two workers on one job."""

import threading

import pytest

from tests.support.native import pop, queued_id

POPPERS = 20
REQUESTS = 30


def test_no_double_claim_under_concurrent_poppers(client, make_user, database_url):
    if not database_url.startswith("postgresql"):
        pytest.skip("concurrent claims are the PostgreSQL path (FOR UPDATE SKIP LOCKED)")
    _, owner = make_user("owner")
    for index in range(POPPERS):
        pop(client, owner, f"w{index}", threads=50)
    requested = {queued_id(client, owner) for _ in range(REQUESTS)}
    claimed, failures = [], []
    barrier = threading.Barrier(POPPERS)

    def popper(index):
        local = client.application.test_client()
        barrier.wait()
        while True:
            try:
                job = pop(local, owner, f"w{index}", threads=50)
            except AssertionError as error:  # pragma: no cover - reported below
                failures.append(error)
                return
            if job["id"] is None:
                return
            claimed.append(job["id"])

    threads = [threading.Thread(target=popper, args=(index,)) for index in range(POPPERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not failures
    assert len(claimed) == len(set(claimed)) == REQUESTS
    from horde.chat.models import ChatJob

    runtime = client.application.extensions["horde"]
    with runtime.db.transaction() as session:
        jobs = session.query(ChatJob).all()
        assert sorted(job.request_id for job in jobs) == sorted(requested)
