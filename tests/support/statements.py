"""What the app asks the database: the SQL statements sent while a block runs, for tests that count work."""

from __future__ import annotations

import contextlib
import sqlite3

from sqlalchemy import event


@contextlib.contextmanager
def statements(runtime, *, transactional_only: bool = False):
    """Every SQL statement the app sends while the block runs, lower-cased, whitespace collapsed. With
    `transactional_only`, those sent inside a transaction block (on PostgreSQL, not in autocommit)."""
    seen = []

    def record(_conn, _cursor, statement, *_):
        seen.append(" ".join(statement.lower().split()))

    engines = runtime.db.engines() if not transactional_only else {runtime.db.engine}
    with _listening(engines, "before_cursor_execute", record):
        yield seen


@contextlib.contextmanager
def statements_with_parameters(runtime):
    """(SQL as sent, its parameters) of every statement the app sends while the block runs."""
    seen: list[tuple[str, object]] = []

    def record(_conn, _cursor, statement, parameters, *_):
        seen.append((statement, parameters))

    with _listening(runtime.db.engines(), "before_cursor_execute", record):
        yield seen


@contextlib.contextmanager
def sqlite_preparations(runtime):
    """Every statement SQLite compiles on the runtime's connections while the block runs, as the authorizer
    actions SQLite asks about (e.g. SQLITE_READ of a column): SQLite asks as it prepares a statement, never as a
    prepared statement runs again. The driver's commit prepares its COMMIT each time; those are left out.
    Installing an authorizer expires a connection's prepared statements, so it is installed once per connection."""
    seen: list[tuple] = []
    installed: set[int] = set()

    def authorize(*action):
        if action[0] != sqlite3.SQLITE_TRANSACTION:
            seen.append(action)
        return sqlite3.SQLITE_OK

    def install(dbapi_connection, *_):
        if id(dbapi_connection) not in installed:
            installed.add(id(dbapi_connection))
            dbapi_connection.set_authorizer(authorize)

    with _listening(runtime.db.engines(), "checkout", install):
        yield seen


@contextlib.contextmanager
def _listening(engines, name: str, listener):
    """`listener` hears the engines' event `name` while the block runs."""
    for engine in engines:
        event.listen(engine, name, listener)
    try:
        yield
    finally:
        for engine in engines:
            event.remove(engine, name, listener)
