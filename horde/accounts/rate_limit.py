"""The per-caller request budget: exact when one caller's admissions run at once (several processes), and
read in constant time however many requests the caller sent in the window.

A caller (the user; the anonymous user: one client address) has at most the limit of admissions in any
RATE_WINDOW_S. Each admission adds one to the caller's count of its second (the `rate_counts` table), and
the budget is the sum of the caller's seconds since the one RATE_WINDOW_S before this one: at most
RATE_WINDOW_S + 1 rows, where a count of the caller's requests read one row per request (under
bench/load.py up to about 1,400 a caller). A second is counted whole, so an admission leaves the budget
between RATE_WINDOW_S and RATE_WINDOW_S + 1 s after it was made: never earlier, so no window of
RATE_WINDOW_S ever holds more than the limit. Chat and text admissions share the counts: one budget.

An admission's INSERT writes the request only while that sum is below the limit, and adds to the count in
the same statement. On PostgreSQL two admissions of one caller could both read limit - 1 and both be
admitted, so the sum waits for the caller's turn first: a transaction-scoped advisory lock keyed by the
caller. The lock and the sum are the PL/pgSQL function RATE_TURN_FUNCTION, called in the INSERT's WHERE:
a statement's snapshot predates any wait inside it, but each query of a VOLATILE function takes a
snapshot of its own, so the sum, made after the wait, sees the counts of the admissions that held the turn
before. The turn is held until the INSERT's transaction ends: when the INSERT is the admission's only
statement it runs in autocommit, one round trip, and the turn is held only while it runs. On SQLite
writers run one at a time (BEGIN IMMEDIATE): the INSERT sums with a subquery, with no turn to take.
See docs/decisions/0009-exact-rate-limit.md, 0016-rate-turn-in-the-insert.md and
0022-rate-counted-by-the-second.md.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    ColumnElement,
    Executable,
    Integer,
    Select,
    String,
    Table,
    bindparam,
    delete,
    func,
    insert,
    or_,
    select,
    text,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from horde import errors
from horde.accounts.models import RateCount
from horde.queueing.model_rows import PLACE_COLUMNS
from horde.storage import precompiled
from horde.storage.database import COMMITS_WITHOUT_FLUSH, last_statement_connection, table_of

RATE_WINDOW_S = 60
#: pg_advisory_xact_lock(classid, objid) keyspaces: classid says what objid counts. Chat and text admissions
#: share one budget, so they share these keys. ("RL" and 1 or 2, below 2**31.)
RATE_LIMIT_USER_LOCK_CLASS = 0x524C_0001  # objid: the user's id
RATE_LIMIT_ADDRESS_LOCK_CLASS = 0x524C_0002  # objid: 32 bits of the client address's SHA-256 (anonymous callers)
#: The caller key's address of a user counted as a whole (every user but the anonymous one).
WHOLE_USER = ""

RATE_COUNTS = table_of(RateCount)
#: Takes the caller's turn and sums its counts since `since_second` (the anonymous user's: one address's).
RATE_TURN_FUNCTION = "horde_rate_turn"
_TAKE_TURN = select(func.pg_advisory_xact_lock(bindparam("classid", type_=Integer), bindparam("objid", type_=Integer)))
_CALLER = (
    RATE_COUNTS.c.user_id == bindparam("user_id", type_=Integer),
    RATE_COUNTS.c.client_address == bindparam("rate_address", type_=String),
)
_USED = select(func.coalesce(func.sum(RATE_COUNTS.c.admitted), 0)).where(
    *_CALLER, RATE_COUNTS.c.epoch_second >= bindparam("since_second", type_=BigInteger)
)
_COUNT_ONE = (
    sqlite.insert(RATE_COUNTS)
    .values(
        user_id=bindparam("user_id", type_=Integer),
        client_address=bindparam("rate_address", type_=String),
        epoch_second=bindparam("now_second", type_=BigInteger),
        admitted=1,
    )
    .on_conflict_do_update(
        index_elements=[RATE_COUNTS.c.user_id, RATE_COUNTS.c.client_address, RATE_COUNTS.c.epoch_second],
        set_={"admitted": RATE_COUNTS.c.admitted + 1},
    )
)
_FORGET_PAST = delete(RATE_COUNTS).where(RATE_COUNTS.c.epoch_second < bindparam("since_second", type_=BigInteger))


def epoch_second() -> int:
    """This second, as the counts are keyed (seconds since the Unix epoch)."""
    return int(time.time())


def _window(now_second: int) -> dict[str, int]:
    """The seconds the budget sums: from the one RATE_WINDOW_S before `now_second`, which an admission of the
    window's first instant may still be counted in."""
    return {"now_second": now_second, "since_second": now_second - RATE_WINDOW_S}


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
    """CREATE OR REPLACE FUNCTION for RATE_TURN_FUNCTION(lock_class, lock_id, caller, address, since_second): waits
    for the caller's turn (lock_key), then sums the caller's counts (user `caller`, `address`: WHOLE_USER or the
    anonymous user's client address) of the seconds from `since_second`. The schema (horde/models.py, sql/)
    creates it on PostgreSQL."""
    return f"""CREATE OR REPLACE FUNCTION {RATE_TURN_FUNCTION}(
    lock_class integer, lock_id integer, caller integer, address varchar, since_second bigint
) RETURNS bigint LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(lock_class, lock_id);
    RETURN (SELECT coalesce(sum(admitted), 0) FROM {RATE_COUNTS.name}
            WHERE user_id = caller AND client_address = address AND epoch_second >= since_second);
END
$$;"""


def count_under_turn_sql(name: str, count: str) -> str:
    """CREATE OR REPLACE FUNCTION `name`(lock_class, lock_id, caller): waits for the caller's turn (lock_key, as
    RATE_TURN_FUNCTION does: a transaction takes it again at no cost), then returns the SQL `count`, which reads the
    caller's id as `caller`. Its query takes a snapshot after the wait, so it counts what every admission that held
    the turn before wrote (a count in the INSERT's own snapshot would not)."""
    return f"""CREATE OR REPLACE FUNCTION {name}(
    lock_class integer, lock_id integer, caller integer
) RETURNS bigint LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(lock_class, lock_id);
    RETURN ({count});
END
$$;"""


def count_under_turn(name: str) -> ColumnElement[int]:
    """A call of a count_under_turn_sql function (bind parameters lock_class, lock_id, user_id)."""
    return getattr(func, name)(
        bindparam("lock_class", type_=Integer),
        bindparam("lock_id", type_=Integer),
        bindparam("user_id", type_=Integer),
        type_=Integer,
    )


def within_concurrency(
    postgres: bool, function: str, in_flight: Select[Any], added: ColumnElement[int] | int = 1
) -> list[ColumnElement[bool]]:
    """An admission's condition of staying within the caller's concurrency: its requests in flight (`in_flight`, a
    count of the caller's, bind parameter `user_id`) and `added` at most `concurrency`, or `any_concurrency` for a
    caller it does not bound. On PostgreSQL counted by `function` (count_under_turn_sql, the same count) after the
    caller's turn, so that its admissions at once are counted one after the other; SQLite's writers take turns."""
    count = count_under_turn(function) if postgres else in_flight.scalar_subquery()
    return [or_(bindparam("any_concurrency", type_=Boolean), count + added <= bindparam("concurrency", type_=Integer))]


def _used_under_turn() -> ColumnElement[int]:
    """RATE_TURN_FUNCTION's sum (bind parameters lock_class, lock_id, user_id, rate_address, since_second)."""
    return getattr(func, RATE_TURN_FUNCTION)(
        bindparam("lock_class", type_=Integer),
        bindparam("lock_id", type_=Integer),
        bindparam("user_id", type_=Integer),
        bindparam("rate_address", type_=String),
        bindparam("since_second", type_=BigInteger),
        type_=Integer,
    )


def _counted_with(created_rows: Any) -> Any:
    """PostgreSQL: the CTE that adds the admission to its caller's count of `now_second`, once `created_rows`
    (the INSERT's RETURNING, a CTE named "created") holds the request: a refused admission counts nothing.

    Why SQL text: SQLAlchemy keeps one list of a statement's Python column defaults, and a second INSERT
    compiled into the same WITH empties it (sqlalchemy/sql/crud.py says that several DML in one statement are
    not supported), so the request's own defaults would be lost. A text clause is not compiled as DML."""
    counted = text(
        f"INSERT INTO {RATE_COUNTS.name} (user_id, client_address, epoch_second, admitted) "
        f"SELECT :user_id, :rate_address, :now_second, 1 FROM {created_rows.name} "
        "ON CONFLICT (user_id, client_address, epoch_second) "
        f"DO UPDATE SET admitted = {RATE_COUNTS.name}.admitted + 1"
    ).bindparams(
        bindparam("user_id", type_=Integer),
        bindparam("rate_address", type_=String),
        bindparam("now_second", type_=BigInteger),
    )
    return counted.columns().cte("counted")


def _insert_statement(
    requests: Table,
    request_models: Table,
    selected: Mapping[str, ColumnElement[Any]],
    postgres: bool,
    returning: Sequence[str],
    where: Sequence[ColumnElement[bool]],
) -> Executable:
    """INSERT the row (`selected`: column name → value) only while the caller's counts since `since_second` sum
    to less than `limit`, and `where` holds; it returns `returning`, or no row when nothing was written. On
    PostgreSQL (`postgres`) the sum waits for the caller's turn (RATE_TURN_FUNCTION), and the same statement adds
    the admission to its count and writes the request's model rows (`model_names`), data-modifying WITHs."""
    used = _used_under_turn() if postgres else _USED.scalar_subquery()  # SQLite: its writers take no turn
    chosen = select(*selected.values()).where(*where, used < bindparam("limit", type_=Integer))
    if postgres:  # no kudos move in an admission's transaction (decision 0023)
        chosen = chosen.where(COMMITS_WITHOUT_FLUSH)
    created = insert(requests).from_select(list(selected), chosen)
    #: Also the request's place in the queue, which its model rows copy (SQLite: the caller writes them).
    written = dict.fromkeys((*returning, *PLACE_COLUMNS))
    if not postgres:
        return created.returning(*(requests.c[name] for name in written))
    created_rows = created.returning(*(requests.c[name] for name in dict.fromkeys(("id", *written)))).cte("created")
    model_names = func.unnest(bindparam("model_names", type_=postgresql.ARRAY(String)))
    placed = (created_rows.c[name] for name in PLACE_COLUMNS)
    model_rows = (
        insert(request_models)
        .from_select(["request_id", *PLACE_COLUMNS, "model"], select(created_rows.c.id, *placed, model_names))
        .cte("model_rows")
    )
    return select(*(created_rows.c[name] for name in returning)).add_cte(model_rows, _counted_with(created_rows))


class InsertBelowLimit:
    """An admission's INSERT that is also its rate check and count, for one kind's requests table, exact when one
    caller's requests arrive at once: on PostgreSQL it takes the caller's turn itself (RATE_TURN_FUNCTION), and
    runs in autocommit when it is its transaction's only statement (horde/storage/database.py,
    last_statement_connection).

    The row's values bind as given; `computed` (column name → SQL expression, e.g. a priority from the balance,
    with `where` joining what it reads) are worked out by the INSERT itself. `where_by_database(postgres)` adds
    the conditions that differ by database: on PostgreSQL a count of the caller's requests that must see every
    admission that held the caller's turn before it calls a function that takes the turn first (chat's and text's
    in-flight counts)."""

    def __init__(
        self,
        requests: Table,
        request_models: Table,
        *,
        returning: Sequence[str],
        computed: Mapping[str, ColumnElement[Any]] | None = None,
        where: Sequence[ColumnElement[bool]] = (),
        where_by_database: Callable[[bool], Sequence[ColumnElement[bool]]] | None = None,
        models_when_none: Sequence[str] = (),
    ):
        self._requests, self._request_models = requests, request_models
        #: The model rows of a request that names no model (text's ANY_MODEL; a chat request always names one).
        self._models_when_none = list(models_when_none)
        self._model_rows = insert(request_models)
        self._returning, self._computed, self._where = tuple(returning), dict(computed or {}), tuple(where)
        #: Conditions that differ by database (PostgreSQL or not): a count that must wait for the caller's turn.
        self._where_by_database = where_by_database
        #: (postgres, the columns given) → the statement, built on first use: a statement object is also the key
        #: of its compiled plan (horde/storage/precompiled.py).
        self._built: dict[tuple[bool, tuple[str, ...]], Executable] = {}

    def _statement(self, postgres: bool, names: tuple[str, ...]) -> Executable:
        statement = self._built.get((postgres, names))
        if statement is None:
            bound = {name: bindparam(f"new_{name}", type_=self._requests.c[name].type) for name in names}
            statement = self._built[(postgres, names)] = _insert_statement(
                self._requests,
                self._request_models,
                bound | self._computed,
                postgres,
                self._returning,
                self._where + tuple(self._where_by_database(postgres) if self._where_by_database else ()),
            )
        return statement

    def run(
        self,
        session: Session,
        values: Mapping[str, Any],
        *,
        limit: int,
        client_address: str | None,
        computed_params: Mapping[str, Any] | None = None,
    ) -> Any:
        """Write the request (`values`: column → value) and its model rows unless the caller (`values`'s
        user_id; the anonymous user: `client_address`) has `limit` admissions in the window: 429 then, with
        nothing written. The `returning` columns of the written row. `computed_params`: the bind parameters of
        the `computed` expressions beside the row's own values.

        Call it last in its transaction: on PostgreSQL, when nothing ran before it, it commits as it runs."""
        connection = last_statement_connection(session)
        postgres = connection.dialect.name == "postgresql"
        models = list(dict.fromkeys(values["models"])) or self._models_when_none
        params = {f"new_{name}": value for name, value in values.items()}
        caller_second = _caller(values["user_id"], client_address) | _window(epoch_second())
        params |= caller_second
        params |= computed_params or {}
        params["limit"] = limit
        if postgres:
            params["model_names"] = models
            params["lock_class"], params["lock_id"] = lock_key(values["user_id"], client_address)
        row = precompiled.execute(connection, self._statement(postgres, tuple(values)), params).first()
        if row is None:
            refuse_if_over(limit, limit, client_address)
        if not postgres:  # SQLite has no INSERT in a WITH clause; its statements cost no round trip
            precompiled.execute(connection, _COUNT_ONE, caller_second)
            if models:
                place = {name: getattr(row, name) for name in PLACE_COLUMNS}
                rows = [{"request_id": values["id"], "model": model, **place} for model in models]
                precompiled.execute_many(connection, self._model_rows, rows)
        return row


def _caller(user_id: int, client_address: str | None) -> dict[str, Any]:
    """The bind parameters of the caller's counts: the user, and the anonymous user's client address."""
    return {"user_id": user_id, "rate_address": WHOLE_USER if client_address is None else client_address}


def refuse_if_used_up(session: Session, user_id: int, client_address: str | None, limit: int) -> None:
    """429 when the caller (the anonymous user: `client_address`) has `limit` admissions in the window: a sum of
    its own, for a refusal of another check that the rate's comes before."""
    params = _caller(user_id, client_address) | _window(epoch_second())
    used = precompiled.execute(session.connection(), _USED, params).scalar() or 0
    refuse_if_over(used, limit, client_address)


def forget_past_seconds(session: Session) -> int:
    """Delete the counts of seconds no budget sums any more (the sweeper's): how many."""
    since_second = _window(epoch_second())["since_second"]
    return precompiled.execute(session.connection(), _FORGET_PAST, {"since_second": since_second}).rowcount or 0


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
