"""Which commits wait for the disk on PostgreSQL (decision 0023): those where kudos may move do; a pop's look and
claim (the walking pool), an admission and a progress do not, and their setting ends with their own transaction."""

from __future__ import annotations

import uuid

import pytest
from sqlalchemy import select, text

from horde.chat import lifecycle, request_rows
from horde.chat.models import ChatRequest
from horde.storage.database import table_of
from tests.support.native import pop, queued_id

WAITS_FOR_THE_DISK = {"engine": "on", "autocommit_engine": "on", "walking_engine": "off"}
BODY = {"model": "m1", "messages": [{"role": "user", "content": "Hello"}]}
#: What an admission works out itself (or a reply writes later): not among the values it is given.
NOT_GIVEN = {"reply", "priority", "priority_class"}


def _setting(session) -> str:
    return session.execute(text("SHOW synchronous_commit")).scalar_one()


@pytest.mark.parametrize("engine_name", sorted(WAITS_FOR_THE_DISK))
def test_only_the_walking_pool_commits_without_waiting_for_the_disk(postgresql_runtime, engine_name):
    """The walking pool runs only pops' looks and claims; settlements run on the other two."""
    with getattr(postgresql_runtime.db, engine_name).connect() as connection:
        assert _setting(connection) == WAITS_FOR_THE_DISK[engine_name]


def test_an_admission_commits_without_waiting_and_the_next_transaction_waits_again(
    postgresql_runtime, client, make_user
):
    _, owner = make_user("owner")
    _, key = make_user("client", kudos=100)
    pop(client, owner, threads=4)
    admitted = client.post("/api/v2/generate/chat/async", json=BODY, headers={"apikey": key})
    assert admitted.status_code == 202, admitted.json
    requests = table_of(ChatRequest)
    with postgresql_runtime.db.read() as session:
        row = session.execute(select(requests).where(requests.c.id == admitted.json["id"])).mappings().one()
    values = {name: value for name, value in row.items() if name not in NOT_GIVEN} | {"id": str(uuid.uuid4())}

    with postgresql_runtime.db.transaction() as session:
        before = _setting(session)  # the admission is not this block's only statement: it runs in the block
        request_rows.admit_request(session, values, limit=100, rate_address=None)
        during = _setting(session)
    with postgresql_runtime.db.transaction() as session:
        after = _setting(session)
    assert (before, during, after) == ("on", "off", "on")


def test_a_progress_commits_without_waiting_and_the_next_transaction_waits_again(postgresql_runtime, client, make_user):
    owner, owner_key = make_user("owner")
    _, key = make_user("client", kudos=100)
    pop(client, owner_key, threads=4)
    queued_id(client, key)
    job_id = pop(client, owner_key, threads=4)["id"]

    with postgresql_runtime.db.transaction() as session:
        before = _setting(session)
        stop, _ = lifecycle.progress(session, owner, {"id": job_id, "content": "Hi"})
        during = _setting(session)
    assert not stop
    with postgresql_runtime.db.transaction() as session:
        after = _setting(session)
    assert (before, during, after) == ("on", "off", "on")
