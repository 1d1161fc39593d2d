"""What the app asks the database: the SQL statements sent while a block runs, for tests that count work."""

from __future__ import annotations

import contextlib

from sqlalchemy import event


@contextlib.contextmanager
def statements(runtime, *, transactional_only: bool = False):
    """Every SQL statement the app sends while the block runs, lower-cased, whitespace collapsed. With
    `transactional_only`, those sent inside a transaction block (on PostgreSQL, not in autocommit)."""
    seen = []

    def record(_conn, _cursor, statement, *_):
        seen.append(" ".join(statement.lower().split()))

    engines = runtime.db.engines() if not transactional_only else {runtime.db.engine}
    for engine in engines:
        event.listen(engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        for engine in engines:
            event.remove(engine, "before_cursor_execute", record)
