"""The per-caller request budget stays exact when one caller's admissions run at once (several processes).

Admission counts the caller's requests of the last RATE_WINDOW_S, then inserts the new one: two statements.
On PostgreSQL two admissions of one caller could both count limit - 1 and both be admitted, so each first
takes a transaction-scoped advisory lock keyed by the caller, in a statement of its own: the count that
follows (a later statement, so a later snapshot under READ COMMITTED) sees every request of the admissions
that held the lock before. A lock taken inside the counting statement would not do: that statement's
snapshot predates the wait. On SQLite writers run one at a time (BEGIN IMMEDIATE): nothing to take.
See docs/decisions/0009-exact-rate-limit.md.

Chat and text requests share the budget: each kind's models module declares its requests table here
(`counts_requests_of`), and every admission counts the rows of all of them (`used_since`), whatever its kind.
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

from horde import errors
from horde.timeutil import utcnow

RATE_WINDOW_S = 60
#: pg_advisory_xact_lock(classid, objid) keyspaces: classid says what objid counts. Chat and text admissions
#: share one budget, so they share these keys. ("RL" and 1 or 2, below 2**31.)
RATE_LIMIT_USER_LOCK_CLASS = 0x524C_0001  # objid: the user's id
RATE_LIMIT_ADDRESS_LOCK_CLASS = 0x524C_0002  # objid: 32 bits of the client address's SHA-256 (anonymous callers)

Statement = TypeVar("Statement")
#: The requests tables the budget counts, in the order their kinds declared them.
_counted_tables: tuple[Table, ...] = ()

_TAKE_TURN = select(func.pg_advisory_xact_lock(bindparam("classid", type_=Integer), bindparam("objid", type_=Integer)))


def lock_key(user_id: int, client_address: str | None) -> tuple[int, int]:
    """(classid, objid) of the caller's budget: the user's, or with `client_address` that address's.

    Two addresses may share a key (32 bits of a hash): their admissions then take turns, nothing worse."""
    if client_address is None:
        return RATE_LIMIT_USER_LOCK_CLASS, user_id
    digest = hashlib.sha256(client_address.encode()).digest()
    return RATE_LIMIT_ADDRESS_LOCK_CLASS, int.from_bytes(digest[:4], "big", signed=True)


def take_turn(session: Session, user_id: int, client_address: str | None) -> None:
    """Wait until no other admission of this caller's budget is open, and hold the turn until this transaction
    ends. Call it before counting; only on PostgreSQL."""
    classid, objid = lock_key(user_id, client_address)
    session.connection().execute(_TAKE_TURN, {"classid": classid, "objid": objid})


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


def _insert_statement(
    requests: Table,
    request_models: Table,
    selected: Mapping[str, ColumnElement[Any]],
    per_address: bool,
    with_models: bool,
    returning: Sequence[str],
    where: Sequence[ColumnElement[bool]],
) -> Executable:
    """INSERT the row (`selected`: column name → value) only while the caller's requests of every counted table
    since `since` (those of `user_id`; with `per_address` only those from `client_address`) are fewer than
    `limit`, and `where` holds; it returns `returning`, or no row when nothing was written. With `with_models`
    (PostgreSQL) the request's model rows (`model_names`) come in the same statement, a data-modifying WITH."""
    chosen = select(*selected.values()).where(
        *where, used_since(by_address=per_address) < bindparam("limit", type_=Integer)
    )
    created = insert(requests).from_select(list(selected), chosen)
    if not with_models:
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
    """An admission's INSERT that is also its rate count, for one kind's requests table: under the caller's turn
    (take_turn) one statement and the COMMIT, exact when one caller's requests arrive at once.

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

    def _statement(self, per_address: bool, with_models: bool, names: tuple[str, ...]) -> Executable:
        bound = {name: bindparam(f"new_{name}", type_=self._requests.c[name].type) for name in names}
        selected = bound | self._computed
        return _insert_statement(
            self._requests,
            self._request_models,
            selected,
            per_address,
            with_models,
            self._returning,
            self._where,
        )

    def run(self, session: Session, values: Mapping[str, Any], *, limit: int, client_address: str | None) -> Any:
        """Write the request (`values`: column → value) and its model rows unless the caller (`values`'s
        user_id; the anonymous user: `client_address`) has `limit` requests of the window: 429 then, with
        nothing written. The `returning` columns of the written row."""
        connection = session.connection()
        postgres = connection.dialect.name == "postgresql"
        models = list(dict.fromkeys(values["models"]))
        params = {f"new_{name}": value for name, value in values.items()}
        params |= {"user_id": values["user_id"], "since": utcnow() - dt.timedelta(seconds=RATE_WINDOW_S)}
        params |= {"limit": limit, "client_address": client_address}
        if postgres:
            params["model_names"] = models
        statement = self._statements.get(client_address is not None, postgres, tuple(values))
        row = connection.execute(statement, params).first()
        if row is None:
            refuse_if_over(limit, limit, client_address)
        if not postgres and models:  # SQLite has no INSERT in a WITH clause; its statements cost no round trip
            connection.execute(self._model_rows, [{"request_id": values["id"], "model": model} for model in models])
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
