"""The worker's calls run once or more per completed request, so each does its work in few statements:
a claiming pop looks once (busy threads and queue probe together) and takes the request with a
compare-and-set (on PostgreSQL the choice, the take and the job's start are one statement); a submit
reads its job, owner and request at once and loads no user row; on PostgreSQL it then writes everything
in one statement that is its own transaction (the balances it moves are locked only while it runs); on
SQLite a submit that carries a pop claims in the submit's own transaction."""

import contextlib

import pytest
from sqlalchemy import event, func, select

from horde.accounts.models import KudosEntry
from horde.chat.claimed_jobs import ClaimedJobs
from horde.chat.models import ChatRequest
from tests.support.native import declaration, pop, queued_id, submit
from tests.support.statements import statements


def _work(seen):
    """The statements that do the work: SQLite's explicit BEGIN IMMEDIATE left out."""
    return [statement for statement in seen if not statement.startswith("begin")]


def _claimed_job(client, runtime, make_user):
    _, key = make_user("owner", kudos=100)
    pop(client, key, "w1")  # the first pop checks the worker in
    request_id = queued_id(client, key)
    with statements(runtime) as seen:
        job = pop(client, key, "w1")
    assert job["id"]
    return key, job["id"], request_id, _work(seen)


def test_a_claiming_pop_takes_one_statement_on_postgresql_four_on_sqlite(client, make_user, runtime):
    _, _, _, seen = _claimed_job(client, runtime, make_user)
    if runtime.db.is_postgresql:  # the look, then the best row locked, taken and its job started: one statement
        assert [statement.split(" ")[0] for statement in seen] == ["with"]
        assert "set_config(" not in seen[0]  # the walking pool's sessions plan the claim with sorts off
        assert seen[0].startswith("with look as (select (select count(*)")
        assert "best as (select" in seen[0] and "for update of chat_requests skip locked" in seen[0]
        assert "union all" in seen[0]  # the requests reserved for the worker first (horde/chat/affinity.py)
        assert "taken as (update chat_requests" in seen[0] and "insert into chat_jobs" in seen[0]
    else:
        assert [statement.split(" ")[0] for statement in seen] == ["select", "select", "update", "insert"]
    assert "chat_jobs" in seen[0] and "chat_request_models" in seen[0]  # busy threads and probe: one look


def test_a_pop_with_its_threads_busy_or_no_queue_claims_nothing_in_one_statement(client, make_user, runtime):
    """On PostgreSQL the claim in the look's statement walks the queue only when the look allows it (SQLite
    looks first, then claims): a worker whose one thread is busy gets nothing though a request waits, and says
    why; a worker whose models have no queue says which
    requests wait for other models (its last long-poll try explains)."""
    _, key = make_user("owner", kudos=100)
    pop(client, key, "w1", threads=1)
    first = queued_id(client, key)
    assert pop(client, key, "w1", threads=1)["id"]
    second = queued_id(client, key)
    with statements(runtime) as seen:
        busy = pop(client, key, "w1", threads=1)
    assert busy["id"] is None and busy["skipped"] == {"threads": 1}
    assert len(_work(seen)) == 1
    assert pop(client, key, "w2", models=["other-model"])["id"] is None  # checked in: the next pop writes nothing
    other = pop(client, key, "w2", models=["other-model"])
    assert other["id"] is None and other["skipped"] == {"models": 1}
    with runtime.db.read() as session:
        states = dict(session.execute(select(ChatRequest.id, ChatRequest.state)).all())
    assert states[first] == "processing" and states[second] == "waiting"


def test_a_postgresql_pop_whose_check_in_is_remembered_claims_without_a_transaction_block(client, make_user, runtime):
    """The look and the one-statement claim need nothing around them: no BEGIN and no COMMIT, and the claim is
    planned to walk the queue's index (the walking pool's sessions start with sorts off)."""
    if not runtime.db.is_postgresql:
        pytest.skip("SQLite has no autocommit: its claim is a write transaction")
    _, key = make_user("owner", kudos=100)
    pop(client, key, "w1")  # checked in: the next pops have nothing to write for it
    queued_id(client, key)
    with transactions(runtime) as begun, statements(runtime, transactional_only=True) as in_transactions:
        assert pop(client, key, "w1")["id"]
    assert begun == [] and in_transactions == []
    with runtime.db.autocommit(walk_indexes=True) as session:
        assert session.connection().exec_driver_sql("SHOW enable_sort").scalar() == "off"
    with runtime.db.autocommit() as session:
        assert session.connection().exec_driver_sql("SHOW enable_sort").scalar() == "on"


def test_a_postgresql_pop_that_checks_in_claims_in_the_check_ins_transaction(client, make_user, runtime):
    """A first pop writes its worker, so its claim rides in that transaction, planned by its first look."""
    if not runtime.db.is_postgresql:
        pytest.skip("SQLite's claims are all in a write transaction")
    _, key = make_user("owner", kudos=100)
    pop(client, key, "w0")  # m1 becomes known and served
    queued_id(client, key)
    with transactions(runtime) as begun, statements(runtime, transactional_only=True) as in_transactions:
        assert pop(client, key, "w1")["id"]  # a new worker: its check-in is written
    assert len(begun) == 1
    assert any("set_config(" in statement for statement in in_transactions)
    assert any(statement.startswith("with best as") for statement in in_transactions)


def test_a_submit_reads_once_and_loads_no_user(client, make_user, runtime):
    """A submit whose claim this process did not see (its pop went to another process) reads its job and request."""
    key, job_id, _, _ = _claimed_job(client, runtime, make_user)
    runtime.claimed_jobs = ClaimedJobs()  # as on another process
    with statements(runtime) as seen:
        assert submit(client, key, job_id).status_code == 200
    seen = _work(seen)
    reads = [statement for statement in seen if statement.startswith("select")]
    assert len(reads) == 1 and "join chat_requests" in reads[0]
    assert not [statement for statement in seen if statement.startswith("select users")]
    if runtime.db.is_postgresql:  # then the request locked, the job's end, the finish and the kudos in one
        assert not reads[0].endswith("for update of chat_requests")
        assert len(seen) == 2 and seen[1].startswith("with locked as (select chat_requests.id")
        assert "for update), submitted as (update chat_jobs" in seen[1]
        assert "insert into kudos_ledger" in seen[1] and "update users" in seen[1]


def test_a_postgresql_submit_of_a_job_this_process_claimed_is_one_statement(client, make_user, runtime):
    """The claim returned the request's terms, kept for the submit (horde/chat/claimed_jobs.py): no read, and
    the same settlement as after one (price, balances, ledger)."""
    if not runtime.db.is_postgresql:
        pytest.skip("SQLite's submit is a write transaction that reads under its lock")
    key, job_id, request_id, _ = _claimed_job(client, runtime, make_user)
    with statements(runtime) as seen:
        answer = submit(client, key, job_id)
    assert answer.status_code == 200 and answer.json["reward"] > 0
    assert len(seen) == 1 and seen[0].startswith("with locked as (select chat_requests.id")
    with runtime.db.read() as session:
        request = session.get(ChatRequest, request_id)
        assert request.state == "done" and request.kudos_charged == answer.json["reward"]
        charged = session.scalar(
            select(func.sum(KudosEntry.amount)).where(KudosEntry.request_id == request_id, KudosEntry.kind == "charge")
        )
    assert charged == -answer.json["reward"]
    # Taken once: a second submit of the job reads, and is refused as before.
    with statements(runtime) as again:
        assert submit(client, key, job_id).status_code == 400
    assert again[0].startswith("select")


def test_a_kept_claim_is_not_used_for_another_owners_submit(client, make_user, runtime):
    key, job_id, _, _ = _claimed_job(client, runtime, make_user)
    _, stranger = make_user("stranger", kudos=100)
    assert submit(client, stranger, job_id).status_code == 404
    assert submit(client, key, job_id).status_code == 200


def test_a_postgresql_submit_opens_no_transaction_block(client, make_user, runtime):
    """Its one write commits as it runs: the owner's balance, which every submit of the owner's workers moves,
    is never locked across a round trip to the server (a COMMIT to come)."""
    if not runtime.db.is_postgresql:
        pytest.skip("SQLite has no autocommit: its submit is a write transaction")
    key, job_id, _, _ = _claimed_job(client, runtime, make_user)
    with transactions(runtime) as begun, statements(runtime, transactional_only=True) as in_transactions:
        assert submit(client, key, job_id).status_code == 200
    assert begun == [] and in_transactions == []


def test_the_claim_serves_the_first_of_the_requests_models_that_the_worker_serves(client, make_user, runtime):
    """Chosen in SQL on PostgreSQL, in Python on SQLite: the request's order decides, not the worker's."""
    _, key = make_user("owner", kudos=100)
    pop(client, key, "w1", models=["m3", "m1", "m2"])
    body = {"models": ["m2", "m1"], "messages": [{"role": "user", "content": "Hello"}]}
    assert client.post("/api/v2/generate/chat/async", json=body, headers={"apikey": key}).status_code == 202
    job = pop(client, key, "w1", models=["m3", "m1", "m2"])
    assert job["model"] == "m2"


@contextlib.contextmanager
def transactions(runtime):
    """How many transactions (BEGIN ... COMMIT) the app opens while the block runs."""
    begun = []

    def count(_connection):
        begun.append(1)

    event.listen(runtime.db.engine, "begin", count)
    try:
        yield begun
    finally:
        event.remove(runtime.db.engine, "begin", count)


def test_a_submit_that_carries_a_pop_claims_in_its_own_transaction(client, make_user, runtime):
    """SQLite: the pop's check-in is remembered, so its first claim rides in the submit's transaction: one
    BEGIN and COMMIT for both, where the submit and the pop had one each. PostgreSQL: the submit commits
    alone, as it runs, then the pop looks and claims in autocommit too: no transaction block at all."""
    key, job_id, _, _ = _claimed_job(client, runtime, make_user)
    queued_id(client, key)
    with transactions(runtime) as begun, statements(runtime) as seen:
        answer = client.post(
            "/api/v2/generate/chat/submit",
            json={"id": job_id, "content": "Hi there", "pop": declaration("w1")},
            headers={"apikey": key},
        )
    assert answer.status_code == 200 and answer.json["next"]["id"]
    assert len(begun) == (0 if runtime.db.is_postgresql else 1)
    if runtime.db.is_postgresql:  # settle (autocommit), then the pop's look and claim
        # the job was claimed here: its terms were kept, so the settlement needs no read
        assert [statement.split(" ")[0] for statement in _work(seen)] == ["with", "with"]
        assert seen[0].startswith("with locked as") and seen[1].startswith("with look as")
