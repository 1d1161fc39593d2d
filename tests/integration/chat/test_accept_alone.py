"""PostgreSQL's one-statement settlement (decision 0015) when the job moved on between its read and the statement:
nothing is written and the submit's refusals come out in their order."""

from __future__ import annotations

import pytest

from horde import errors
from horde.accounts.identity import Identity
from horde.chat import lifecycle, request_rows
from tests.support.ledger import assert_balances_match_ledger
from tests.support.native import pop, queued_id, status, submit

BODY = {"content": "Hi there"}


@pytest.fixture
def postgresql_runtime(runtime):
    if not runtime.db.is_postgresql:
        pytest.skip("SQLite settles in a transaction of several statements")
    return runtime


def _settle_a_stale_read(client, runtime, make_user, meanwhile) -> tuple[str, str, errors.HordeError]:
    """Read a job's row for its submit, run `meanwhile(owner key, job id)`, then settle from the row read
    before: (owner key, request id, the refusal)."""
    user, owner = make_user("owner", kudos=100)
    pop(client, owner)
    request_id = queued_id(client, owner)
    job_id = pop(client, owner)["id"]
    with runtime.db.read() as session:
        row = lifecycle.read_for_submit(session, Identity.of(user), job_id)
    meanwhile(owner, job_id)
    with pytest.raises(errors.HordeError) as refused, runtime.db.autocommit() as session:
        lifecycle.accept_alone(session, runtime.settings, row, dict(BODY, id=job_id))
    return owner, request_id, refused.value


def _charged(runtime, request_id: str) -> int:
    with runtime.db.read() as session:
        return request_rows.read_request(session, request_id).kudos_charged


def test_a_job_submitted_meanwhile_is_refused_as_a_duplicate_and_charged_once(client, make_user, postgresql_runtime):
    def submitted(owner, job_id):
        assert submit(client, owner, job_id).status_code == 200

    owner, request_id, refusal = _settle_a_stale_read(client, postgresql_runtime, make_user, submitted)
    assert (refusal.rc, refusal.message) == ("DuplicateGen", "This job was already submitted.")
    assert status(client, owner, request_id).json["state"] == "done"
    assert _charged(postgresql_runtime, request_id) > 0
    assert_balances_match_ledger(postgresql_runtime.db)


def test_a_job_faulted_meanwhile_is_refused_as_aborted_and_nothing_is_charged(client, make_user, postgresql_runtime):
    def faulted(owner, job_id):
        answer = client.post("/api/v2/generate/chat/fault", json={"id": job_id}, headers={"apikey": owner})
        assert answer.status_code == 200

    owner, request_id, refusal = _settle_a_stale_read(client, postgresql_runtime, make_user, faulted)
    assert refusal.rc == "AbortedGen"
    assert status(client, owner, request_id).json["state"] == "waiting"
    assert _charged(postgresql_runtime, request_id) == 0
    assert_balances_match_ledger(postgresql_runtime.db)
