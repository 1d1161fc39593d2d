"""SQLAlchemy engine and sessions: SQLite (WAL) by default, PostgreSQL when configured.

`Database.transaction()` is the one place that commits a transaction of several statements;
`Database.autocommit()` runs statements that are atomic on their own.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, cast

from sqlalchemy import (
    ColumnElement,
    Connection,
    CursorResult,
    Engine,
    Executable,
    Table,
    create_engine,
    event,
    func,
    make_url,
    text,
    true,
)
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError, SQLAlchemyError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from sqlalchemy.orm import DeclarativeBase, Session
from sqlalchemy.sql.elements import SQLCoreOperations

from horde import errors
from horde.config import POOLER_TRANSACTION
from horde.storage.pg_engines import postgresql_pools

log = logging.getLogger(__name__)

SQLITE_BUSY_TIMEOUT_MS = 10_000
#: A commit checkpoints the write-ahead log itself only past this many pages (SQLite's default is 1,000, 4 MiB of
#: 4 KiB pages): a server checkpoints in a thread of its own (horde/storage/sqlite_checkpoint.py), long before.
SQLITE_AUTOCHECKPOINT_PAGES = 10_000
#: PostgreSQL: a condition that holds and makes its statement's transaction commit without waiting for the disk,
#: as the walking pool's sessions do (horde/storage/pg_engines.py WALKING_SETTINGS), for a statement whose
#: transaction moves no kudos (no round trip of its own; the setting ends with the transaction).
COMMITS_WITHOUT_FLUSH: ColumnElement[bool] = func.set_config("synchronous_commit", "off", true()) == "off"
#: SQLSTATEs of a lost or refused connection: class 08, and the server shutting down or starting up.
CONNECTION_SQLSTATES = ("08", "57P01", "57P02", "57P03")
#: SQLite failures that pass with time: a lock held past the busy timeout, a file that cannot be opened or read now.
SQLITE_BUSY_ERRORS = ("SQLITE_BUSY", "SQLITE_LOCKED")
SQLITE_UNAVAILABLE_ERRORS = (*SQLITE_BUSY_ERRORS, "SQLITE_CANTOPEN", "SQLITE_IOERR")
BUSY_MESSAGE = (
    f"The Horde's database is too busy to answer right now. Retry after {errors.ServiceUnavailable.RETRY_AFTER_S} s."
)


def is_busy(exc: BaseException) -> bool:
    """The database answers but is saturated: no pooled connection free in time, or a SQLite lock held too long."""
    if isinstance(exc, PoolTimeout):
        return True
    return isinstance(exc, DBAPIError) and str(getattr(exc.orig, "sqlite_errorname", "")).startswith(SQLITE_BUSY_ERRORS)


def is_unavailable(exc: BaseException) -> bool:
    """True when `exc` says the database cannot serve now (unreachable or busy), not that a statement was wrong."""
    if isinstance(exc, PoolTimeout):
        return True
    if not isinstance(exc, DBAPIError):
        return False
    if exc.connection_invalidated:
        return True
    if not isinstance(exc, (OperationalError, InterfaceError)):
        return False
    sqlite_name = getattr(exc.orig, "sqlite_errorname", None)
    if sqlite_name is not None:
        return sqlite_name.startswith(SQLITE_UNAVAILABLE_ERRORS)
    sqlstate = getattr(exc.orig, "sqlstate", None)
    return sqlstate is None or sqlstate.startswith(CONNECTION_SQLSTATES)


def _close(session: CoreFirstSession) -> None:
    """Close a session whose work is done (or failed already): a connection that dies now loses nothing."""
    try:
        session.close()
    except Exception as exc:
        if not is_unavailable(exc):
            raise
        log.info("a database connection died as its session closed; the pool replaces it")


class CoreFirstSession:
    """What Database's blocks yield as their Session: `connection()` is the block's own connection, checked out
    (and, in a transaction, begun) on first use; any other Session method goes to an ORM Session on that same
    connection, made when first asked, and flushed before the block commits.

    Why: the hot paths run Core statements on `session.connection()`, and an ORM Session's own bookkeeping around
    them (its transaction object, events, commit and close) cost more CPU than a short statement (about 150 µs a
    block against a Connection's, measured on SQLite). Code that uses the ORM keeps a real Session, on the
    same connection and in the same transaction.
    """

    __slots__ = ("_alone_engine", "_begin", "_connection", "_engine", "_orm", "ran_alone")

    def __init__(self, engine: Engine, *, begin: bool, alone_engine: Engine | None = None):
        self._engine, self._begin, self._alone_engine = engine, begin, alone_engine
        self._connection: Connection | None = None
        self._orm: Session | None = None
        #: The block's statement ran on an autocommit connection (last_statement_connection): it may have
        #: committed whatever happens to the block afterwards.
        self.ran_alone = False

    def connection(self) -> Connection:
        connection = self._connection
        if connection is None:
            connection = self._connection = self._engine.connect()
            if self._begin:
                connection.begin()
        return connection

    def last_statement_connection(self) -> Connection:
        """The connection for the block's last statement. When it is also the block's first (nothing was read or
        written before it) and the block may run alone (`alone_engine`, PostgreSQL), one in autocommit: the
        statement commits as it runs, without BEGIN and COMMIT round trips, and its locks last only while it
        runs. Nothing that must be atomic with it may follow."""
        if self._connection is None and self._orm is None and self._alone_engine is not None:
            self._connection = self._alone_engine.connect()
            self.ran_alone = True
            return self._connection
        return self.connection()

    def get_bind(self) -> Engine:
        return self._engine

    def __getattr__(self, name: str) -> Any:
        orm = self._orm
        if orm is None:
            orm = self._orm = Session(bind=self.connection(), expire_on_commit=False)
        return getattr(orm, name)

    def commit(self) -> None:
        if self._orm is not None:
            self._orm.flush()
        if self._connection is not None:
            self._connection.commit()

    def rollback(self) -> None:
        if self._connection is not None:
            self._connection.rollback()

    def close(self) -> None:
        """Detach what the ORM loaded (it stays readable) and give the connection back to its pool."""
        orm, connection, self._orm, self._connection = self._orm, self._connection, None, None
        try:
            if orm is not None:
                orm.close()
        finally:
            if connection is not None:
                connection.close()


class Base(DeclarativeBase):
    """Declarative base of every table."""


def table_of(model: type[Base]) -> Table:
    """The Core table of a mapped class, for statements built once that load no ORM objects (the hot paths)."""
    return cast(Table, model.__table__)


def insert_ignoring_duplicates(session: Session, table: type[Base], rows: list[dict], key: str) -> None:
    """INSERT ... ON CONFLICT (key) DO NOTHING, on SQLite and PostgreSQL alike: a row written once, whoever is first."""
    if not rows:
        return
    insert = postgresql_insert if is_postgresql(session) else sqlite_insert
    session.execute(insert(table).values(rows).on_conflict_do_nothing(index_elements=[key]))


class Database:
    def __init__(self, url: str, pooler: str | None = None):
        """`pooler`: HORDE_DATABASE_POOLER, what sits between PostgreSQL and the Horde (horde/storage/pg_engines.py);
        "transaction": a pooler in transaction mode, where nothing may outlive a transaction."""
        self.url = url
        self.is_sqlite = url.startswith("sqlite")
        #: The SQLite database's file, or None (PostgreSQL, or a database in memory).
        self.sqlite_file = _sqlite_file(url) if self.is_sqlite else None
        self.is_postgresql = url.startswith("postgresql")
        if self.is_postgresql and url.startswith("postgresql://"):
            url = "postgresql+psycopg://" + url[len("postgresql://") :]
        if self.is_sqlite:
            self._ensure_sqlite_folder(url)
            self.engine = _sqlite_engine(url, "BEGIN IMMEDIATE")
            # Readers take no write lock: under WAL they never wait for (nor block) a writer.
            self.read_engine = _sqlite_engine(url, "BEGIN")
            self.autocommit_engine = self.engine
            self.walking_engine = self.engine
        else:
            self.engine, self.autocommit_engine, self.walking_engine = postgresql_pools(url, pooler)
            self.read_engine = self.autocommit_engine
        #: The walking pool's statements run in a transaction that sets what they need (behind a transaction
        #: pooler); else each runs alone in autocommit, in a session that starts with it.
        self._walks_in_transactions = self.is_postgresql and pooler == POOLER_TRANSACTION
        #: Called once when the database becomes unreachable (the runtime wakes every waiter to notice).
        self.on_unreachable: Callable[[], None] | None = None
        self.reachable = True

    @staticmethod
    def _ensure_sqlite_folder(url: str) -> None:
        path = url.split("///", 1)[-1] if "///" in url else ""
        if path and path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)

    def transaction(self) -> contextlib.AbstractContextManager[Session]:
        """Yield a session; commit when the block ends, roll back when it raises.

        A lost or refused connection raises errors.ServiceUnavailable.
        """
        alone = None if self.is_sqlite else self.autocommit_engine
        return self._transaction(self.engine, alone)

    @contextlib.contextmanager
    def _transaction(self, engine: Engine, alone: Engine | None) -> Iterator[Session]:
        session = CoreFirstSession(engine, begin=True, alone_engine=alone)
        committing = False
        try:
            yield cast(Session, session)
            committing = True
            session.commit()
        except BaseException as exc:
            if not is_unavailable(exc):
                session.rollback()
                raise
            with contextlib.suppress(SQLAlchemyError):
                session.rollback()
            raise self._unavailable(exc, maybe_committed=committing or session.ran_alone) from exc
        finally:
            _close(session)
        self._reached()

    @contextlib.contextmanager
    def autocommit(self, *, walk_indexes: bool = False) -> Iterator[Session]:
        """Yield a session for statements that are each atomic on their own: one read, or one write
        that needs no other statement's result (a compare-and-set UPDATE, an INSERT with its CTEs).

        On PostgreSQL each statement commits as it runs, saving the BEGIN and COMMIT round trips; a
        lost connection raises errors.ServiceUnavailable whose write may have happened. On SQLite it is
        a write transaction. With `walk_indexes` (PostgreSQL) the statements are planned with sorts off
        (horde/storage/pg_engines.py WALKING_SETTINGS), on a pool of their own; behind a pooler in transaction
        mode they run in one transaction that starts with those settings.
        """
        if self.is_sqlite:
            with self.transaction() as session:
                yield session
        elif walk_indexes and self._walks_in_transactions:
            with self._transaction(self.walking_engine, None) as session:
                yield session
        else:
            engine = self.walking_engine if walk_indexes else self.autocommit_engine
            with self._untransacted(engine, maybe_committed=True) as session:
                yield session

    def read(self) -> contextlib.AbstractContextManager[Session]:
        """A session for reading only; nothing it does is committed (on PostgreSQL it runs in autocommit)."""
        return self._untransacted(self.read_engine, maybe_committed=False)

    @contextlib.contextmanager
    def _untransacted(self, engine: Engine, *, maybe_committed: bool) -> Iterator[Session]:
        """A session that is never committed here: a lost connection becomes errors.ServiceUnavailable."""
        session = CoreFirstSession(engine, begin=False)
        try:
            yield cast(Session, session)
        except BaseException as exc:
            if is_unavailable(exc):
                raise self._unavailable(exc, maybe_committed=maybe_committed) from exc
            raise
        finally:
            _close(session)  # the pool rolls the connection back; loaded objects stay readable, detached
        self._reached()

    def ping(self) -> bool:
        """One round trip to the database, for the readiness probe."""
        try:
            with self.read() as session:
                session.execute(text("SELECT 1"))
        except (errors.ServiceUnavailable, SQLAlchemyError):
            return False
        return True

    def _unavailable(self, exc: BaseException, *, maybe_committed: bool) -> errors.ServiceUnavailable:
        """The 503 for `exc`. A lost database (not a busy one) also wakes every waiter, once per outage."""
        if is_busy(exc):
            error = errors.ServiceUnavailable(BUSY_MESSAGE)
            error.maybe_committed = maybe_committed
            return error
        error = errors.ServiceUnavailable()
        error.maybe_committed = maybe_committed
        if self.reachable:
            self.reachable = False
            log.warning("the database is unreachable; answering 503 service_unavailable until it returns")
            self._drop_pooled_connections()
            if self.on_unreachable is not None:
                self.on_unreachable()
        return error

    def _drop_pooled_connections(self) -> None:
        """Forget every pooled connection of every engine: an outage seen on one engine's connection killed
        the others' too, and a connection used again within PING_IF_IDLE_S is not pinged. Connections in
        use are left to their sessions; each pool opens new ones as needed."""
        for engine in self.engines():
            engine.dispose(close=False)

    def _reached(self) -> None:
        if not self.reachable:
            self.reachable = True
            log.warning("the database is reachable again")

    def engines(self) -> set[Engine]:
        """Every engine (pool) of the database; on SQLite some are the same."""
        return {self.engine, self.read_engine, self.autocommit_engine, self.walking_engine}

    def dispose(self) -> None:
        for engine in self.engines():
            engine.dispose()


def rows_changed(session: Session, statement: Executable) -> int:
    """Run an UPDATE (a compare-and-set: its WHERE names the state it expects) and return how many rows it
    changed. Loaded objects are left alone; the caller knows what it wrote."""
    result = session.execute(statement, execution_options={"synchronize_session": False})
    return cast(CursorResult[Any], result).rowcount


def last_statement_connection(session: Session) -> Connection:
    """The connection for a transaction block's last statement: in autocommit when it is the block's only one
    (CoreFirstSession.last_statement_connection); the block's own connection otherwise."""
    if isinstance(session, CoreFirstSession):
        return session.last_statement_connection()
    return session.connection()


def like_planned_once(column: SQLCoreOperations[Any], pattern: ColumnElement[str]) -> ColumnElement[bool]:
    """`column LIKE pattern`, with `pattern` (a bind parameter) sent to SQLite inside an expression.

    Why: SQLite plans a LIKE whose right side is a bare parameter for that parameter's value (its LIKE
    optimization), so binding a value expires the prepared statement and every run prepared it anew; for a
    claim's statement that cost about ten times the run itself. `pattern || ''` is the same text on both
    backends."""
    return column.like(pattern.concat(""))


def is_postgresql(session: Session) -> bool:
    """Whether `session` talks to PostgreSQL, where concurrent writers need row locks (SQLite runs one at a time)."""
    return session.get_bind().dialect.name == "postgresql"


def _sqlite_file(url: str) -> str | None:
    name = make_url(url).database
    return name if name and name != ":memory:" and not name.startswith("file:") else None


def _sqlite_pragmas(dbapi_connection, _record):
    dbapi_connection.isolation_level = None  # transactions are begun explicitly below
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
    cursor.execute(f"PRAGMA wal_autocheckpoint={SQLITE_AUTOCHECKPOINT_PAGES}")
    cursor.close()


def _sqlite_engine(url: str, begin_statement: str):
    """A SQLite engine whose transactions start with `begin_statement`.

    Writers use BEGIN IMMEDIATE: they take the write lock at once, so two writers
    never deadlock on a lock upgrade.
    """
    engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": SQLITE_BUSY_TIMEOUT_MS / 1000})
    event.listen(engine, "connect", _sqlite_pragmas)
    event.listen(engine, "begin", functools.partial(_begin_on_the_driver, begin_statement))
    return engine


def _begin_on_the_driver(begin_statement: str, connection: Connection) -> None:
    """Send `begin_statement` straight to sqlite3: exec_driver_sql added 8 µs of SQLAlchemy's Python to each
    BEGIN, four times a request. (BEGIN is no statement the app's listeners count: they hear a transaction
    begin through this same event.)"""
    try:
        connection.connection.dbapi_connection.execute(begin_statement)  # type: ignore[union-attr]
    except sqlite3.Error as exc:  # as SQLAlchemy would raise it: a lock held too long is a busy database
        raise DBAPIError.instance(begin_statement, (), exc, sqlite3.Error, dialect=connection.dialect) from exc
