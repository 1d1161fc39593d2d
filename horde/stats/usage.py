"""Each user's usage by UTC day (user_usage_days): written by the rollup as it passes served rows, read by the
account console (GET /api/v2/users/{id}/usage), a row per day whatever the user asked for.

A row is added to, never set: `requests = requests + excluded.requests`, so two rollups of different series (chat,
text) that reach the same user and day in racing transactions both count. A series' rows are rolled once (the
mark's compare-and-set, rollup.py), so each served row counts once.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable

from sqlalchemy import bindparam, select
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import Session

from horde.stats.models import UserUsageDay
from horde.stats.series import as_date
from horde.storage.database import is_postgresql, table_of

_DAYS = table_of(UserUsageDay)

#: A user's days from `first` on, oldest first (at most the window's: the key's range).
_DAYS_SINCE = (
    select(_DAYS.c.day, _DAYS.c.requests, _DAYS.c.tokens)
    .where(_DAYS.c.user_id == bindparam("user_id"), _DAYS.c.day >= bindparam("first"))
    .order_by(_DAYS.c.day)
)


def add(session: Session, counted: Iterable) -> None:
    """Add each (user_id, day, requests, tokens) of `counted` to its user's day, in `session`'s transaction; rows
    in key order, so that two transactions adding to the same users lock their rows in the same order."""
    keyed = sorted(
        (int(user_id), as_date(day), int(requests), int(tokens)) for user_id, day, requests, tokens in counted
    )
    rows = [
        {"user_id": user, "day": day, "requests": requests, "tokens": tokens} for user, day, requests, tokens in keyed
    ]
    if not rows:
        return
    insert = (postgresql_insert if is_postgresql(session) else sqlite_insert)(_DAYS).values(rows)
    session.execute(
        insert.on_conflict_do_update(
            index_elements=[_DAYS.c.user_id, _DAYS.c.day],
            set_={
                "requests": _DAYS.c.requests + insert.excluded.requests,
                "tokens": _DAYS.c.tokens + insert.excluded.tokens,
            },
        )
    )


def days_since(session: Session, user_id: int, first: dt.date) -> dict[dt.date, tuple[int, int]]:
    """The user's requests and tokens per day from `first` on (days without any left out)."""
    found = session.execute(_DAYS_SINCE, {"user_id": user_id, "first": first})
    return {as_date(day): (int(requests), int(tokens)) for day, requests, tokens in found}
