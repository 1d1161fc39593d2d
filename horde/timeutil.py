"""One clock for the whole server: naive UTC datetimes, as stored in the database."""

from __future__ import annotations

import datetime as dt


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC).replace(tzinfo=None)


def seconds_since(moment: dt.datetime | None, now: dt.datetime | None = None) -> float:
    if moment is None:
        return float("inf")
    return ((now or utcnow()) - moment).total_seconds()
