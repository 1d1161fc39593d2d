"""The per-caller request budget stays exact when one caller's admissions run at once (several processes).

An admission's INSERT writes the request only while the caller's requests of the last RATE_WINDOW_S are
fewer than the limit. On PostgreSQL two admissions of one caller could both count limit - 1 and both be
admitted, so the count waits for the caller's turn first: a transaction-scoped advisory lock keyed by the
caller. The lock and the count are the PL/pgSQL function RATE_TURN_FUNCTION, called in the INSERT's
WHERE: a statement's snapshot predates any wait inside it, but each query of a VOLATILE function takes a
snapshot of its own, so the count, made after the wait, sees every request of the admissions that held
the turn before. The turn is held until the INSERT's transaction ends: when the INSERT is the admission's
only statement it runs in autocommit, one round trip, and the turn is held only while it runs. On SQLite
writers run one at a time (BEGIN IMMEDIATE): the INSERT counts with subqueries, with no turn to take.
See docs/decisions/0009-exact-rate-limit.md and 0016-rate-turn-in-the-insert.md.

Chat and text requests share the budget: each kind's models module declares its requests table here
(`counts_requests_of`), and every admission counts the rows of all of them (`used_since`, and the function's
body, `turn_function_sql`), whatever its kind.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Generic, TypeVar

from sqlalchemy import (
    ColumnElement,
    DateTime,
    Executable,
    Integer,
    ScalarSelect,
    String,
    Table,
    bindparam,
    func,
    insert,
    literal,
    select,
)
from sqlalchemy.dialects import postgresql
from sqlalchemy.orm import Session

from horde import errors, precompiled
from horde.database import last_statement_connection
from horde.timeutil import utcnow

RATE_WINDOW_S = 60
#: pg_advisory_xact_lock(classid, objid) keyspaces: classid says what objid counts. Chat and text admissions
#: share one budget, so they share these keys. ("RL" and 1 or 2, below 2**31.)
RATE_LIMIT_USER_LOCK_CLASS = 0x524C_0001  # objid: the user's id
RATE_LIMIT_ADDRESS_LOCK_CLASS = 0x524C_0002  # objid: 32 bits of the client address's SHA-256 (anonymous callers)

Statement = TypeVar("Statement")
#: The requests tables the budget counts, in the order their kinds declared them.
_counted_tables: tuple[Table, ...] = ()

#: Takes the caller's turn and counts its requests since `since` (the anonymous user's: those from one address).
RATE_TURN_FUNCTION = "horde_rate_turn"
_TAKE_TURN = select(func.pg_advisory_xact_lock(bindparam("classid", type_=Integer), bindparam("objid", type_=Integer)))


def lock_key(user_id: int, client_address: str | None) -> tuple[int, int]:
    """(classid, objid) of the caller's budget: the user's, or with `client_address` that address's.

    Two addresses may share a key (32 bits of a hash): their admissions then take turns, nothing worse."""
    if client_address is None:
        return RATE_LIMIT_USER_LOCK_CLASS, user_id
    digest = hashlib.sha256(client_address.encode()).digest()
    return RATE_LIMIT_ADDRESS_LOCK_CLASS, int.from_bytes(digest[:4], "big", signed=True)


def take_turn(session: Session, user_id: int, client_address: str | None) -> None:
    """Wait for the caller's turn and hold it until this transaction ends (PostgreSQL only), for an admission that
    locks a row its INSERT reads before that INSERT: the turn must come first (decision 0016). The INSERT's own
    taking of the turn then finds it held by its own transaction and goes on."""
    classid, objid = lock_key(user_id, client_address)
    precompiled.execute(session.connection(), _TAKE_TURN, {"classid": classid, "objid": objid})


def turn_function_sql() -> str:
    """CREATE OR REPLACE FUNCTION for RATE_TURN_FUNCTION(lock_class, lock_id, caller, since, address): waits for
    the caller's turn (lock_key), then returns its requests of every counted table created since `since`, those
    from `address` alone when it is not null. The schema (horde/models.py, sql/) creates it on PostgreSQL."""
    by_user = "user_id = caller AND created_at >= since"
    counts = [f"(SELECT count(*) FROM {table.name} WHERE {{where}})" for table in _counted_tables] or ["0"]
    total = "\n             + ".join(counts)
    return f"""CREATE OR REPLACE FUNCTION {RATE_TURN_FUNCTION}(
    lock_class integer, lock_id integer, caller integer, since timestamp without time zone, address varchar
) RETURNS bigint LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(lock_class, lock_id);
    IF address IS NULL THEN
        RETURN {total.format(where=by_user)};
    END IF;
    RETURN {total.format(where=by_user + " AND client_address = address")};
END
$$;"""


def counts_requests_of(table: Table) -> None:
    """Count `table`'s rows (with user_id, client_address and created_at columns) in every caller's budget."""
    global _counted_tables
    if table not in _counted_tables:
        _counted_tables = (*_counted_tables, table)


class CountingStatements(Generic[Statement]):
    """Statements that count the budget (they name every counted table), built on first use for each shape
    (`build`'s arguments) and built again if a kind declares its table after that."""

    def __init__(self, build: Callable[..., Statement]):
        self._build = build
        self._built: dict[tuple, Statement] = {}

    def get(self, *shape: Any) -> Statement:
        key = (shape, _counted_tables)
        statement = self._built.get(key)
        if statement is None:
            statement = self._built[key] = self._build(*shape)
        return statement


def used_since(*, by_address: bool) -> ColumnElement[int]:
    """The caller's requests of every counted table created since the bind parameter `since`: those of
    `user_id`, and with `by_address` only those from `client_address`. A SQL expression, to select."""
    counts = [_created_since(table, by_address=by_address) for table in _counted_tables]
    return sum(counts[1:], counts[0]) if counts else literal(0)


def _created_since(table: Table, *, by_address: bool) -> ScalarSelect:
    conditions = [
        table.c.user_id == bindparam("user_id"),
        table.c.created_at >= bindparam("since", type_=DateTime),
    ]
    if by_address:
        conditions.append(table.c.client_address == bindparam("client_address"))
    return select(func.count()).where(*conditions).scalar_subquery()


def _used_under_turn() -> ColumnElement[int]:
    """RATE_TURN_FUNCTION's count (bind parameters lock_class, lock_id, user_id, since, client_address)."""
    return getattr(func, RATE_TURN_FUNCTION)(
        bindparam("lock_class", type_=Integer),
        bindparam("lock_id", type_=Integer),
        bindparam("user_id", type_=Integer),
        bindparam("since", type_=DateTime),
        bindparam("client_address", type_=String),
        type_=Integer,
    )


def _insert_statement(
    requests: Table,
    request_models: Table,
    selected: Mapping[str, ColumnElement[Any]],
    per_address: bool,
    postgres: bool,
    returning: Sequence[str],
    where: Sequence[ColumnElement[bool]],
) -> Executable:
    """INSERT the row (`selected`: column name → value) only while the caller's requests of every counted table
    since `since` (those of `user_id`; with `per_address` only those from `client_address`) are fewer than
    `limit`, and `where` holds; it returns `returning`, or no row when nothing was written. On PostgreSQL
    (`postgres`) the count waits for the caller's turn (RATE_TURN_FUNCTION), and the request's model rows
    (`model_names`) come in the same statement, a data-modifying WITH."""
    used = _used_under_turn() if postgres else used_since(by_address=per_address)
    chosen = select(*selected.values()).where(*where, used < bindparam("limit", type_=Integer))
    created = insert(requests).from_select(list(selected), chosen)
    if not postgres:
        return created.returning(*(requests.c[name] for name in returning))
    created_rows = created.returning(requests.c.id, *(requests.c[name] for name in returning)).cte("created")
    model_names = func.unnest(bindparam("model_names", type_=postgresql.ARRAY(String)))
    model_rows = (
        insert(request_models)
        .from_select(["request_id", "model"], select(created_rows.c.id, model_names))
        .cte("model_rows")
    )
    return select(*(created_rows.c[name] for name in returning)).add_cte(model_rows)


class InsertBelowLimit:
    """An admission's INSERT that is also its rate count, for one kind's requests table, exact when one caller's
    requests arrive at once: on PostgreSQL it takes the caller's turn itself (RATE_TURN_FUNCTION), and runs in
    autocommit when it is its transaction's only statement (horde/database.py, last_statement_connection).

    The row's values bind as given; `computed` (column name → SQL expression, e.g. a priority from the balance,
    with `where` joining what it reads) are worked out by the INSERT itself."""

    def __init__(
        self,
        requests: Table,
        request_models: Table,
        *,
        returning: Sequence[str],
        computed: Mapping[str, ColumnElement[Any]] | None = None,
        where: Sequence[ColumnElement[bool]] = (),
    ):
        self._requests, self._request_models = requests, request_models
        self._model_rows = insert(request_models)
        self._returning, self._computed, self._where = tuple(returning), dict(computed or {}), tuple(where)
        self._statements = CountingStatements(self._statement)

    def _statement(self, per_address: bool, postgres: bool, names: tuple[str, ...]) -> Executable:
        bound = {name: bindparam(f"new_{name}", type_=self._requests.c[name].type) for name in names}
        selected = bound | self._computed
        return _insert_statement(
            self._requests,
            self._request_models,
            selected,
            per_address,
            postgres,
            self._returning,
            self._where,
        )

    def run(self, session: Session, values: Mapping[str, Any], *, limit: int, client_address: str | None) -> Any:
        """Write the request (`values`: column → value) and its model rows unless the caller (`values`'s
        user_id; the anonymous user: `client_address`) has `limit` requests of the window: 429 then, with
        nothing written. The `returning` columns of the written row.

        Call it last in its transaction: on PostgreSQL, when nothing ran before it, it commits as it runs."""
        connection = last_statement_connection(session)
        postgres = connection.dialect.name == "postgresql"
        models = list(dict.fromkeys(values["models"]))
        params = {f"new_{name}": value for name, value in values.items()}
        params |= {"user_id": values["user_id"], "since": utcnow() - dt.timedelta(seconds=RATE_WINDOW_S)}
        params |= {"limit": limit, "client_address": client_address}
        if postgres:
            params["model_names"] = models
            params["lock_class"], params["lock_id"] = lock_key(values["user_id"], client_address)
        statement = self._statements.get(client_address is not None, postgres, tuple(values))
        row = precompiled.execute(connection, statement, params).first()
        if row is None:
            refuse_if_over(limit, limit, client_address)
        if not postgres and models:  # SQLite has no INSERT in a WITH clause; its statements cost no round trip
            precompiled.execute_many(
                connection, self._model_rows, [{"request_id": values["id"], "model": model} for model in models]
            )
        return row


_USED = CountingStatements(lambda by_address: select(used_since(by_address=by_address)))


def refuse_if_used_up(session: Session, user_id: int, client_address: str | None, limit: int) -> None:
    """429 when the caller (the anonymous user: `client_address`) has `limit` requests of the window: a count of
    its own, for a refusal of another check that the rate's comes before."""
    params = {"user_id": user_id, "since": utcnow() - dt.timedelta(seconds=RATE_WINDOW_S)}
    params["client_address"] = client_address
    used = session.connection().scalar(_USED.get(client_address is not None), params) or 0
    refuse_if_over(used, limit, client_address)


def refuse_if_over(used: int, limit: int, client_address: str | None) -> None:
    """429 once the caller has `limit` requests in the window: `client_address` names the anonymous caller."""
    if used < limit:
        return
    raise errors.TooManyRequests(
        f"Too many requests: at most {limit} chat and text requests a minute per "
        f"{'client address' if client_address else 'user'}.",
        headers={
            "Retry-After": str(RATE_WINDOW_S),
            "X-RateLimit-Limit": str(limit),
            "X-RateLimit-Remaining": "0",
            "X-RateLimit-Reset": str(RATE_WINDOW_S),
        },
    )
