"""Admission's round trips (issue 12): what one admitted request costs the database, counted (never timed)."""

from __future__ import annotations

from horde.accounts.identity import Identity
from horde.chat import service
from tests.support.native import pop
from tests.support.statements import statements


def test_a_request_is_admitted_in_four_statements_and_never_read_back(runtime, client, make_user):
    _, worker_key = make_user("owner")
    pop(client, worker_key)
    user, _ = make_user("client", kudos=100)
    native = {"model": "m1", "messages": [{"role": "user", "content": "Hello"}], "max_tokens": 16}
    service.create(runtime, Identity.of(user), dict(native))  # the per-process snapshots are warm from here

    with statements(runtime) as seen:
        request = service.create(runtime, Identity.of(user), dict(native), body_hash="ab" * 32, holders=1)

    admission = [s for s in seen if not s.startswith(("begin", "commit", "rollback"))]
    snapshots = [s for s in admission if "order by" in s]  # the queue and typical job time, once a second
    assert [s.split(" (")[0] for s in admission if s not in snapshots] == [
        *_rate_turn(runtime),
        "select users.kudos,",  # the caller's balance and its rate count, in one statement
        "select workers.id, workers.name, workers.owner_id, workers.models, workers.max_length,"
        " workers.max_context_length, workers.threads, workers.features_mask, workers.guarantees_mask,"
        " workers.max_temperature_with_tools, workers.last_pop_at, users.trusted as owner_trusted from workers"
        " join users on workers.owner_id = users.id",  # the roster with its owners' trust
        *_inserts(runtime),
    ]
    stored = service.read(runtime, request.id)
    assert stored is not None
    assert (stored.body_hash, stored.holders, stored.state, stored.models) == ("ab" * 32, 1, "waiting", ["m1"])
    assert stored.context_adjustments is None and stored.reply is None


def _rate_turn(runtime) -> list[str]:
    """PostgreSQL: the caller's admissions take turns before the count (its own statement, so that the count's
    snapshot is taken after the wait); SQLite's writers take turns already."""
    turn = "select pg_advisory_xact_lock(%(classid)s::integer, %(objid)s::integer) as pg_advisory_xact_lock_1"
    return [turn] if runtime.db.is_postgresql else []


def _inserts(runtime) -> list[str]:
    """body_hash and holders included, so no UPDATE follows; on PostgreSQL the model rows come in the same
    statement (one round trip)."""
    if runtime.db.is_postgresql:
        return ["with created as"]
    return ["insert into chat_requests", "insert into chat_request_models"]
