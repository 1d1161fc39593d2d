"""PostgreSQL's three pools, directly or behind a pooler in transaction mode (HORDE_DATABASE_POOLER).

Why a mode: a pooler in transaction mode (PgBouncer's `pool_mode = transaction`) lends a server connection to a
client for one transaction, then to another. Whatever outlives a transaction on a server connection is then
another client's: psycopg's prepared statements (`_pg3_0` prepared on one server connection, executed on
another: "does not exist", or prepared again where another client made it: "already exists"), startup `options`
(PgBouncer 1.18 refuses them, or drops them when told to ignore them), and any `SET` or session lock. In that mode
the pools prepare nothing (psycopg's `prepare_threshold=None`), send no startup options, and the walking pool's
settings last for its session's transaction alone (`SET LOCAL`, sent with its `BEGIN`).
"""

from __future__ import annotations

import time
from typing import Any

from gevent.monkey import get_original
from sqlalchemy import Connection, Engine, create_engine, event, make_url
from sqlalchemy.exc import DisconnectionError

from horde.config import POOLER_TRANSACTION
from horde.storage.pg_cursor import DescribedOnceCursor
from horde.storage.pg_hub_wait import HubWaitConnection, waits_on_the_hub

#: Per process and per engine; transactions are short, so a few connections serve many greenlets. Every one
#: stays open once made, so there is no overflow: SQLAlchemy closes an overflow connection when it is
#: returned, and under bench/load.py those were opened and closed again all the time (a connection costs
#: both processes far more than a statement: in our profile about 7 % of the server's CPU). A greenlet that
#: finds every connection busy waits for one.
POSTGRES_POOL_SIZE = 16
POSTGRES_POOL_OVERFLOW = 0
#: The autocommit engine's pool: its sessions hold a connection for one statement at a time.
POSTGRES_AUTOCOMMIT_POOL_SIZE = 16
POSTGRES_AUTOCOMMIT_POOL_OVERFLOW = 0
#: The index-walking autocommit engine's pool (a worker's claim: two statements a pop). The three pools make 40
#: connections a process, as the two did before claims left the transactional pool.
POSTGRES_WALKING_POOL_SIZE = 8
#: The walking pool's session settings (decisions 0020, 0023 and 0025). One plan per prepared statement: its
#: statements (a pop's look and claim) carry their states as literals (horde/storage/precompiled.py), so their plan
#: for any worker is the plan for the states they read, and PostgreSQL's default would plan them again on every run
#: for the worker's limits (the other pools plan as PostgreSQL does by default: a statement that binds a state,
#: `state = $1`, needs a plan for its value, since on a Horde that keeps its history most rows are finished ones).
#: Sorts off: an ORDER BY ... LIMIT walks its index in order and stops at the first row that passes the filters,
#: where the planner, unable to estimate the filters, would sort the whole table. Materializing and sequential
#: scans off: a look or a walk reads the model rows of the worker's models by their index and probes each row's
#: request by its key, where a plan made for any models, which takes a model to hold a share of every row (the
#: backlog's model too), would read them all (decision 0043). Commits that do not wait for the disk: a pop's look
#: and claim move no kudos (decision 0023).
WALKING_SETTINGS = (
    ("plan_cache_mode", "force_generic_plan"),
    ("enable_sort", "off"),
    ("enable_material", "off"),
    ("enable_seqscan", "off"),
    ("synchronous_commit", "off"),
)
#: The walking pool's settings as libpq's startup `options`, for every session of the pool.
POSTGRES_WALKING_OPTIONS = " ".join(f"-c {name}={value}" for name, value in WALKING_SETTINGS)
#: Behind a pooler in transaction mode: the walking pool's sessions run in a transaction that starts with its
#: settings, all in one round trip (a simple query of several statements; the driver is in autocommit, so it sends
#: no BEGIN of its own, and its commit sends COMMIT since the server is in a transaction).
WALKING_TRANSACTION_START = "BEGIN; " + " ".join(f"SET LOCAL {name} = {value};" for name, value in WALKING_SETTINGS)
#: A pooled PostgreSQL connection idle this long is pinged before use (see _ping_idle_connections).
PING_IF_IDLE_S = 1.0
_CHECKED_IN_AT = "horde_checked_in_at"
#: How long opening a connection may take before the database counts as unreachable.
POSTGRES_CONNECT_TIMEOUT_S = 3
#: The operating system's select even under gevent's patching: a zero-timeout look never yields.
_select_without_waiting = get_original("select", "select")


def postgresql_pools(url: str, pooler: str | None) -> tuple[Engine, Engine, Engine]:
    """(transactional, autocommit, walking) engines for `url` (a postgresql+psycopg URL), as `pooler` allows."""
    behind_transaction_pooler = pooler == POOLER_TRANSACTION
    transactional = _postgresql_engine(url, POSTGRES_POOL_SIZE, POSTGRES_POOL_OVERFLOW, pooler=pooler)
    # Each statement commits by itself: no BEGIN, COMMIT or ROLLBACK round trips. Reads lose nothing: at READ
    # COMMITTED every statement takes its own snapshot anyway.
    autocommit = _postgresql_engine(
        url,
        POSTGRES_AUTOCOMMIT_POOL_SIZE,
        POSTGRES_AUTOCOMMIT_POOL_OVERFLOW,
        pooler=pooler,
        isolation_level="AUTOCOMMIT",
    )
    walking = _postgresql_engine(
        url,
        POSTGRES_WALKING_POOL_SIZE,
        0,
        pooler=pooler,
        isolation_level="AUTOCOMMIT",
        server_options="" if behind_transaction_pooler else POSTGRES_WALKING_OPTIONS,
    )
    if behind_transaction_pooler:
        event.listen(walking, "begin", _begin_with_the_walking_settings)
    return transactional, autocommit, walking


def _begin_with_the_walking_settings(connection: Connection) -> None:
    """A walking session's transaction, begun with its settings (behind a pooler in transaction mode). A failure is
    handled as SQLAlchemy handles a statement's: its error, and the connection invalidated when it was lost."""
    dbapi_connection: Any = connection.connection.dbapi_connection
    try:
        dbapi_connection.execute(WALKING_TRANSACTION_START).close()
    except BaseException as exc:
        connection._handle_dbapi_exception(exc, WALKING_TRANSACTION_START, (), None, None)


def _postgresql_engine(
    url: str, pool_size: int, overflow: int, *, pooler: str | None, server_options: str = "", **options: Any
) -> Engine:
    """`server_options`: settings every session of the pool starts with (libpq's `options`, "-c name=value"),
    after the URL's own `options`, which they would otherwise replace. Behind a pooler in transaction mode no
    statement is prepared on the server."""
    given = make_url(url).query.get("options")
    connect_args: dict[str, Any] = {
        "connect_timeout": POSTGRES_CONNECT_TIMEOUT_S,
        "cursor_factory": DescribedOnceCursor,
    }
    if pooler == POOLER_TRANSACTION:
        connect_args["prepare_threshold"] = None
    session_options = " ".join(option for option in (given, server_options) if isinstance(option, str) and option)
    if session_options:
        connect_args["options"] = session_options
    engine = create_engine(url, pool_size=pool_size, max_overflow=overflow, connect_args=connect_args, **options)
    _ping_idle_connections(engine)
    event.listen(engine, "do_connect", _connect_waiting_on_the_hub)
    return engine


def _ping_idle_connections(engine: Engine) -> None:
    """Drop pooled connections that died in an outage, so the pool reconnects by itself.

    Like pool_pre_ping, but only for a connection idle for PING_IF_IDLE_S or more: under load connections
    come back within milliseconds, and a ping on every checkout would be one more round trip per
    transaction. A connection that dies while in use fails its statement; the pool then replaces every
    connection older than the failure.
    """

    @event.listens_for(engine, "checkin")
    def _note_checkin(_dbapi_connection: Any, record: Any) -> None:
        record.info[_CHECKED_IN_AT] = time.monotonic()

    @event.listens_for(engine, "checkout")
    def _ping_if_idle(dbapi_connection: Any, record: Any, _proxy: Any) -> None:
        checked_in_at = record.info.get(_CHECKED_IN_AT)
        recent = checked_in_at is not None and time.monotonic() - checked_in_at < PING_IF_IDLE_S
        if recent and not _has_unread_input(dbapi_connection):
            return
        try:
            alive = engine.dialect.do_ping(dbapi_connection)
        except Exception as exc:
            raise DisconnectionError("a pooled connection died while idle") from exc
        if not alive:
            raise DisconnectionError("a pooled connection died while idle")


def _has_unread_input(dbapi_connection: Any) -> bool:
    """Whether an idle connection's socket has something to read: the server's goodbye, or the end of a
    connection cut on the way. A healthy idle connection has nothing. One system call, no round trip."""
    try:
        readable, _, _ = _select_without_waiting([dbapi_connection.fileno()], [], [], 0)
    except (OSError, ValueError):  # the connection is closed already
        return True
    return bool(readable)


def _connect_waiting_on_the_hub(_dialect: Any, _record: Any, cargs: tuple, cparams: dict) -> Any:
    """Under gevent, a connection whose statements wait on the hub (horde/storage/pg_hub_wait.py); else
    psycopg's own."""
    if not waits_on_the_hub():
        return None  # SQLAlchemy connects as it would
    return HubWaitConnection.connect(*cargs, **cparams)
