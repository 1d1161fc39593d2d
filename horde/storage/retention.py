"""Rows kept for a retention window: written once, with their creation and expiry."""

from __future__ import annotations

import datetime as dt

from horde.storage.database import Base, Database, insert_ignoring_duplicates
from horde.timeutil import utcnow


def insert_once_kept(db: Database, table: type[Base], row: dict, keep_s: float) -> None:
    """Insert `row` unless its `id` is there (a replay adds nothing), created now and expiring `keep_s` later."""
    now = utcnow()
    kept = {**row, "created_at": now, "expires_at": now + dt.timedelta(seconds=keep_s)}
    with db.transaction() as session:
        insert_ignoring_duplicates(session, table, [kept], "id")
