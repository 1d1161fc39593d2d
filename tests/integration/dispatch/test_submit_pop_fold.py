"""A fault (or a SQLite submit) whose pop is folded into its transaction keeps the call when the claim fails
there; a call whose pop keeps failing is kept too.

The failure is a real one of PostgreSQL: a trigger refuses the insert of the worker's next job, once (the
folded attempt) or every time. The call is kept either way, settled once, and its answer says so."""

from __future__ import annotations

import contextlib

import pytest
from sqlalchemy import text

from tests.support.ledger import assert_balances_match_ledger
from tests.support.native import declaration, pop, queued_id, status

FAIL_ONCE = "nextval('fold_fault_count') = 1"
FAIL_ALWAYS = "true"


@pytest.fixture
def postgresql_runtime(runtime):
    if not runtime.db.is_postgresql:
        pytest.skip("the fault is a PostgreSQL trigger")
    return runtime


@contextlib.contextmanager
def job_inserts_failing(runtime, when: str):
    """A trigger raises in every insert into chat_jobs for which `when` holds, while the block runs."""
    with runtime.db.transaction() as session:
        session.execute(text("CREATE SEQUENCE fold_fault_count"))
        session.execute(
            text(
                "CREATE FUNCTION fold_fault() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
                f"IF {when} THEN RAISE EXCEPTION 'no new job now'; END IF; RETURN NEW; END $$"
            )
        )
        session.execute(
            text("CREATE TRIGGER fold_fault BEFORE INSERT ON chat_jobs FOR EACH ROW EXECUTE FUNCTION fold_fault()")
        )
    try:
        yield
    finally:
        with runtime.db.transaction() as session:
            session.execute(text("DROP TRIGGER fold_fault ON chat_jobs"))
            session.execute(text("DROP FUNCTION fold_fault()"))
            session.execute(text("DROP SEQUENCE fold_fault_count"))


def _worker_with_a_job_and_a_queue(client, make_user):
    _, owner = make_user("owner", kudos=100)
    pop(client, owner)  # checks w1 in: the check-in is remembered, so the next pop may be folded
    done_id = queued_id(client, owner)
    job = pop(client, owner)
    return owner, job["id"], done_id, queued_id(client, owner)


def _call(client, owner, route, job_id):
    body = {"id": job_id, "pop": declaration("w1")}
    body |= {"content": "Hi there"} if route == "submit" else {"reason": "oom"}
    return client.post(f"/api/v2/generate/chat/{route}", json=body, headers={"apikey": owner})


def test_a_claim_failing_in_the_faults_transaction_keeps_the_fault_and_pops_after_it(
    client, make_user, postgresql_runtime
):
    """(A PostgreSQL submit folds no pop: it commits alone, then pops.)"""
    owner, job_id, faulted_id, waiting_id = _worker_with_a_job_and_a_queue(client, make_user)
    with job_inserts_failing(postgresql_runtime, FAIL_ONCE):
        answer = _call(client, owner, "fault", job_id)
    assert answer.status_code == 200, answer.json
    assert answer.json["message"] == "OK"
    assert answer.json["next"]["id"] is not None  # the pop after the commit took a job
    views = [status(client, owner, id_).json for id_ in (faulted_id, waiting_id)]
    assert sorted(view["state"] for view in views) == ["processing", "waiting"]  # the fault restarted its request
    assert_balances_match_ledger(postgresql_runtime.db)


@pytest.mark.parametrize("route", ["submit", "fault"])
def test_a_claim_that_keeps_failing_keeps_the_call_and_answers_no_job(client, make_user, postgresql_runtime, route):
    owner, job_id, done_id, waiting_id = _worker_with_a_job_and_a_queue(client, make_user)
    with job_inserts_failing(postgresql_runtime, FAIL_ALWAYS):
        answer = _call(client, owner, route, job_id)
    assert answer.status_code == 200, answer.json
    assert (answer.json["next"]["id"], answer.json["next"]["rc"]) == (None, "InternalError")
    view = status(client, owner, done_id).json
    assert view["state"] == ("done" if route == "submit" else "waiting")
    assert view["attempts"] == 1
    assert status(client, owner, waiting_id).json["state"] == "waiting"
    assert_balances_match_ledger(postgresql_runtime.db)


def test_a_submit_refused_after_its_folded_claim_takes_no_job(client, make_user):
    """The claim runs before the kudos move; a refusal after it (a second submit of a settled job) rolls it back."""
    owner, job_id, done_id, waiting_id = _worker_with_a_job_and_a_queue(client, make_user)
    assert _call(client, owner, "submit", job_id).json["next"]["id"]  # takes waiting_id
    another = queued_id(client, owner)
    refused = _call(client, owner, "submit", job_id)
    assert (refused.status_code, refused.json["rc"]) == (400, "DuplicateGen")
    assert [status(client, owner, id_).json["state"] for id_ in (done_id, waiting_id, another)] == [
        "done",
        "processing",
        "waiting",
    ]
