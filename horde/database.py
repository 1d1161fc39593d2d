"""SQLAlchemy engine and sessions: SQLite (WAL) by default, PostgreSQL when configured.

`Database.transaction()` is the one place that commits.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

from sqlalchemy import CursorResult, Executable, create_engine, event
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import DeclarativeBase, Session, sessionmaker

SQLITE_BUSY_TIMEOUT_MS = 10_000
#: Per process; transactions are short, so a few connections serve many greenlets.
POSTGRES_POOL_SIZE = 10
POSTGRES_POOL_OVERFLOW = 10


class Base(DeclarativeBase):
    """Declarative base of every table."""


def insert_ignoring_duplicates(session: Session, table: type[Base], rows: list[dict], key: str) -> None:
    """INSERT ... ON CONFLICT (key) DO NOTHING, on SQLite and PostgreSQL alike: a row written once, whoever is first."""
    if not rows:
        return
    insert = postgresql_insert if is_postgresql(session) else sqlite_insert
    session.execute(insert(table).values(rows).on_conflict_do_nothing(index_elements=[key]))


class Database:
    def __init__(self, url: str):
        self.url = url
        self.is_sqlite = url.startswith("sqlite")
        self.is_postgresql = url.startswith("postgresql")
        if self.is_postgresql and url.startswith("postgresql://"):
            url = "postgresql+psycopg://" + url[len("postgresql://"):]
        if self.is_sqlite:
            self._ensure_sqlite_folder(url)
            self.engine = _sqlite_engine(url, "BEGIN IMMEDIATE")
            # Readers take no write lock: under WAL they never wait for (nor block) a writer.
            self.read_engine = _sqlite_engine(url, "BEGIN")
        else:
            self.engine = create_engine(url, pool_size=POSTGRES_POOL_SIZE, max_overflow=POSTGRES_POOL_OVERFLOW,
                                        pool_pre_ping=True)
            self.read_engine = self.engine
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)
        self._read_sessions = sessionmaker(self.read_engine, expire_on_commit=False)

    @staticmethod
    def _ensure_sqlite_folder(url: str) -> None:
        path = url.split("///", 1)[-1] if "///" in url else ""
        if path and path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)

    def create_schema(self) -> None:
        import horde.models  # noqa: F401  (registers every table)

        Base.metadata.create_all(self.engine)

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Session]:
        """Yield a session; commit when the block ends, roll back when it raises."""
        session: Session = self._sessions()
        try:
            yield session
            session.commit()
        except BaseException:
            session.rollback()
            raise
        finally:
            session.close()

    @contextlib.contextmanager
    def read(self) -> Iterator[Session]:
        """Yield a session for reading only; nothing it does is committed."""
        session: Session = self._read_sessions()
        try:
            yield session
        finally:
            session.close()  # the pool rolls the connection back; loaded objects stay readable, detached

    def dispose(self) -> None:
        self.engine.dispose()
        if self.read_engine is not self.engine:
            self.read_engine.dispose()


def rows_changed(session: Session, statement: Executable) -> int:
    """Run an UPDATE (a compare-and-set: its WHERE names the state it expects) and return how many rows it
    changed. Loaded objects are left alone; the caller knows what it wrote."""
    result = session.execute(statement, execution_options={"synchronize_session": False})
    return cast(CursorResult[Any], result).rowcount


def is_postgresql(session: Session) -> bool:
    """Whether `session` talks to PostgreSQL, where concurrent writers need row locks (SQLite runs one at a time)."""
    return session.get_bind().dialect.name == "postgresql"


def _sqlite_pragmas(dbapi_connection, _record):
    dbapi_connection.isolation_level = None  # transactions are begun explicitly below
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
    cursor.close()


def _sqlite_engine(url: str, begin_statement: str):
    """A SQLite engine whose transactions start with `begin_statement`.

    Writers use BEGIN IMMEDIATE: they take the write lock at once, so two writers
    never deadlock on a lock upgrade.
    """
    engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": SQLITE_BUSY_TIMEOUT_MS / 1000})
    event.listen(engine, "connect", _sqlite_pragmas)
    event.listen(engine, "begin", lambda connection: connection.exec_driver_sql(begin_statement))
    return engine
