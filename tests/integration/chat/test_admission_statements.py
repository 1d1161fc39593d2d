"""Admission's round trips (issue 12): what one admitted request costs the database, counted (never timed)."""

from __future__ import annotations

from horde.accounts.identity import Identity
from horde.accounts.rate_limit import RATE_TURN_FUNCTION
from horde.app import create_app
from horde.chat import service
from horde.chat.snapshots import Snapshots
from horde.runtime import Runtime
from tests.support.native import pop
from tests.support.statements import statements

#: The per-process snapshots (a second in production) last the whole test: what is cached stays cached.
CACHED_S = 3600
#: Admission's roster: the online workers with their owners' trust, cached with the snapshots (the SQL's start).
ROSTER = (
    "select workers.id, workers.name, workers.owner_id, workers.models, workers.max_length,"
    " workers.max_context_length, workers.threads, workers.features_mask, workers.guarantees_mask,"
    " workers.max_temperature_with_tools, workers.last_pop_at, users.trusted as owner_trusted from workers"
    " join users on workers.owner_id = users.id where workers.last_pop_at >="
)


def test_a_request_is_admitted_in_one_statement_in_autocommit_and_never_read_back(runtime, client, make_user):
    """PostgreSQL: one INSERT that takes the caller's turn and counts its rate, reads its balance for the priority
    and writes the request with its model rows, in autocommit (no BEGIN, no COMMIT: nothing on the transactional
    pool). SQLite: the two INSERTs, the first with the count."""
    _, worker_key = make_user("owner")
    pop(client, worker_key)
    user, _ = make_user("client", kudos=100)
    native = {"model": "m1", "messages": [{"role": "user", "content": "Hello"}], "max_tokens": 16}
    runtime.snapshots = Snapshots(max_age_s=CACHED_S)
    service.create(runtime, Identity.of(user), dict(native))  # the per-process snapshots are warm from here

    with statements(runtime) as seen, statements(runtime, transactional_only=True) as in_a_transaction:
        request = service.create(runtime, Identity.of(user), dict(native), body_hash="ab" * 32, holders=1)

    seen = [s for s in seen if not s.startswith(("begin", "commit", "rollback"))]
    assert [s.split(" (")[0] for s in seen] == _inserts(runtime)
    assert "from users" in seen[0] and _counts_the_rate(seen[0])
    if runtime.db.is_postgresql:
        assert in_a_transaction == []
    stored = service.read(runtime, request.id)
    assert stored is not None
    assert (stored.body_hash, stored.holders, stored.state, stored.models) == ("ab" * 32, 1, "waiting", ["m1"])
    assert (stored.priority, stored.priority_class) == (request.priority, request.priority_class) == (100, 0)
    assert stored.context_adjustments is None and stored.reply is None


def test_the_callers_turn_comes_after_the_reads_of_the_workers_and_the_queue(runtime, client, make_user):
    """On PostgreSQL the rate turn makes the caller's other admissions wait until this one commits: it is taken
    by the INSERT, the last statement, so everything that needs no count (the roster, the queue, the fitting)
    runs before it. Cold snapshots, so every read is a statement here, and the INSERT runs in their transaction."""
    _, worker_key = make_user("owner")
    pop(client, worker_key)
    user, _ = make_user("client", kudos=100)
    native = {"model": "m1", "messages": [{"role": "user", "content": "Hello"}], "max_tokens": 16}
    runtime.snapshots = Snapshots(max_age_s=CACHED_S)

    with statements(runtime) as seen, statements(runtime, transactional_only=True) as in_a_transaction:
        service.create(runtime, Identity.of(user), dict(native))

    seen = [s for s in seen if not s.startswith(("begin", "commit", "rollback"))]
    count = len(seen) - len(_inserts(runtime))
    assert any(s.startswith(ROSTER) for s in seen[:count])
    assert [s.split(" (")[0] for s in seen[count:]] == _inserts(runtime)
    assert [s for s in seen if _counts_the_rate(s)] == [seen[count]]
    assert seen[count] in in_a_transaction


def test_a_worker_checked_in_by_another_process_serves_the_very_next_request(runtime, client, make_user, settings):
    """The roster is cached for a second per process; a refusal reads it afresh, so a worker that another
    process checked in a moment ago is not missed."""
    _, owner_key = make_user("owner")
    pop(client, owner_key)
    user, _ = make_user("client", kudos=100)
    native = {"model": "m1", "messages": [{"role": "user", "content": "Hello"}], "max_tokens": 16}
    runtime.snapshots = Snapshots(max_age_s=CACHED_S)
    service.create(runtime, Identity.of(user), dict(native))  # this process's roster: one worker, of m1
    other_process = Runtime.build(settings)
    try:
        pop(create_app(runtime=other_process).test_client(), owner_key, name="w2", models=["m2"])
    finally:
        other_process.close()

    with statements(runtime) as seen:
        request = service.create(runtime, Identity.of(user), dict(native, model="m2"))

    assert request.models == ["m2"] and any(s.startswith(ROSTER) for s in seen)


def test_a_declaration_changed_in_this_process_applies_to_the_very_next_request(runtime, client, make_user):
    _, owner_key = make_user("owner")
    pop(client, owner_key, max_length=1024)
    user, _ = make_user("client", kudos=100)
    native = {"model": "m1", "messages": [{"role": "user", "content": "Hello"}], "max_tokens": 512}
    runtime.snapshots = Snapshots(max_age_s=CACHED_S)
    assert service.create(runtime, Identity.of(user), dict(native)).max_tokens == 512
    pop(client, owner_key, max_length=256)

    request = service.create(runtime, Identity.of(user), dict(native))

    assert request.max_tokens == 256
    assert request.context_adjustments == [{"from": 512, "to": 256, "reason": "worker_max_length"}]


def _counts_the_rate(statement: str) -> bool:
    """PostgreSQL: the function that takes the caller's turn and sums its counts (horde/accounts/rate_limit.py).
    SQLite: the sum's subquery."""
    return f"{RATE_TURN_FUNCTION}(" in statement or "sum(rate_counts.admitted)" in statement


def _inserts(runtime) -> list[str]:
    """body_hash and holders included, so no UPDATE follows; on PostgreSQL the model rows and the caller's count
    come in the same statement (one round trip). The request's INSERT sums the caller's counts."""
    if runtime.db.is_postgresql:
        return ["with created as"]
    return ["insert into chat_requests", "insert into rate_counts", "insert into chat_request_models"]
