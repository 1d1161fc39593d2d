"""A user's usage per UTC day of a window: generations served to its requests and their tokens (the rollup's
user_usage_days, which outlive the swept requests), and the kudos its requests were charged and its workers
earned (the ledger's charges and rewards, summed per day through its index by user and time)."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import bindparam, func, select
from sqlalchemy.orm import Session

from horde.accounts.models import KudosEntry
from horde.accounts.moves import Kind
from horde.stats import usage
from horde.stats.series import as_date, day_start
from horde.storage.database import table_of
from horde.timeutil import utcnow

_LEDGER = table_of(KudosEntry)
_DAY = day_start(_LEDGER.c.created_at)
#: The user's charges and rewards per day and kind from `start` on.
_KUDOS_BY_DAY = (
    select(_DAY, _LEDGER.c.kind, func.sum(_LEDGER.c.amount))
    .where(
        _LEDGER.c.user_id == bindparam("user_id"),
        _LEDGER.c.created_at >= bindparam("start"),
        _LEDGER.c.kind.in_([Kind.CHARGE.value, Kind.REWARD.value]),
    )
    .group_by(_DAY, _LEDGER.c.kind)
)


def by_day(session: Session, user_id: int, days: int, now: dt.datetime | None = None) -> dict:
    """The last `days` UTC days of the user's usage, oldest first, today last. Requests and tokens count once the
    stats rollup passed them (its lag: about two minutes); kudos as they move."""
    today = (now or utcnow()).date()
    first = today - dt.timedelta(days=days - 1)
    served = usage.days_since(session, user_id, first)
    kudos: dict[tuple[dt.date, str], int] = {}
    start = dt.datetime.combine(first, dt.time())
    for day, kind, total in session.execute(_KUDOS_BY_DAY, {"user_id": user_id, "start": start}):
        kudos[as_date(day), kind] = int(total)
    answer = []
    for offset in range(days):
        day = first + dt.timedelta(days=offset)
        requests, tokens = served.get(day, (0, 0))
        answer.append(
            {
                "day": day.isoformat(),
                "requests": requests,
                "tokens": tokens,
                "kudos_spent": -kudos.get((day, Kind.CHARGE.value), 0),
                "kudos_earned": kudos.get((day, Kind.REWARD.value), 0),
            }
        )
    return {"days": answer}
