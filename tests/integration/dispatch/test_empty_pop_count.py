"""An empty pop of a worker whose models have no queue counts every waiting request (`skipped.models`): that
count reads the whole queue, so a process takes it at most once a second, and again at once after its own
admissions and claims."""

from __future__ import annotations

import pytest
from sqlalchemy import insert

from horde.chat.models import ChatRequest
from horde.storage.database import table_of
from tests.support.native import declaration, pop, queued_id, submit
from tests.support.statements import statements

#: The count's statement, as tests.support.statements records it.
COUNT_OF_WAITING = "select count(*) as count_1 from chat_requests where chat_requests.state ="


def counts_of_waiting(seen) -> int:
    return sum(statement.startswith(COUNT_OF_WAITING) for statement in seen)


@pytest.fixture
def queued_for_a(client, make_user):
    """Worker a serves m1, worker b m2, and one request waits for m1: (the owner's key, the request's id)."""
    _, owner = make_user("owner")
    pop(client, owner, "a", models=["m1"])
    pop(client, owner, "b", models=["m2"])
    return owner, queued_id(client, owner, model="m1")


def test_idle_empty_pops_count_the_queue_once_and_again_after_an_admission(client, runtime, queued_for_a):
    owner, _ = queued_for_a
    with statements(runtime) as seen:
        answers = [pop(client, owner, "b", models=["m2"])["skipped"] for _ in range(3)]
    assert answers == [{"models": 1}] * 3
    assert counts_of_waiting(seen) == 1

    queued_id(client, owner, model="m1")
    with statements(runtime) as seen:
        assert pop(client, owner, "b", models=["m2"])["skipped"] == {"models": 2}
    assert counts_of_waiting(seen) == 1


def test_a_claim_of_this_process_is_counted_at_once(client, queued_for_a):
    owner, _ = queued_for_a
    assert pop(client, owner, "b", models=["m2"])["skipped"] == {"models": 1}
    assert pop(client, owner, "a", models=["m1"])["id"]
    assert pop(client, owner, "b", models=["m2"])["skipped"] == {}


def test_a_claim_carried_by_a_submit_is_counted_at_once(client, queued_for_a):
    owner, _ = queued_for_a
    queued_id(client, owner, model="m1")
    job = pop(client, owner, "a", models=["m1"])["id"]
    assert pop(client, owner, "b", models=["m2"])["skipped"] == {"models": 1}
    answer = submit(client, owner, job, pop=declaration("a", models=["m1"]))
    assert answer.status_code == 200 and answer.json["next"]["id"], answer.json
    assert pop(client, owner, "b", models=["m2"])["skipped"] == {}


def test_another_processs_admission_is_counted_within_the_snapshots_age(client, runtime, queued_for_a):
    """A request this process did not admit (written here straight to the table, as another process would)
    shows once the count is older than the snapshots' age (set to 0 here: always older)."""
    owner, first = queued_for_a
    assert pop(client, owner, "b", models=["m2"])["skipped"] == {"models": 1}
    requests = table_of(ChatRequest)
    with runtime.db.read() as session:
        row = dict(session.execute(requests.select().where(requests.c.id == first)).mappings().one())
    with runtime.db.transaction() as session:
        session.execute(insert(requests).values(row | {"id": "another-process"}))
    assert pop(client, owner, "b", models=["m2"])["skipped"] == {"models": 1}  # this process's count, still fresh
    runtime.snapshots.max_age_s = 0
    assert pop(client, owner, "b", models=["m2"])["skipped"] == {"models": 2}
