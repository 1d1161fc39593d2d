"""How many accounts one client address made today (UTC): at most HORDE_REGISTRATIONS_PER_ADDRESS_PER_DAY.

The count is raised by one upsert whose update holds only below the limit (a compare-and-set), in the
registration's transaction: on PostgreSQL the row stays locked until that transaction ends, so concurrent
registrations from one address, on any number of processes, make exactly the allowed number of accounts, and a
registration refused later in its transaction (a used-up invite) rolls its count back.
"""

from __future__ import annotations

import datetime as dt
from typing import cast

from sqlalchemy import CursorResult, delete
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import Session

from horde import errors
from horde.registration.models import RegistrationCount
from horde.storage.database import is_postgresql, table_of
from horde.timeutil import utcnow

DAY_S = 86_400
_COUNTS = table_of(RegistrationCount)


def epoch_day(moment: dt.datetime) -> int:
    """The UTC day of `moment` (a naive UTC datetime), as days since the Unix epoch."""
    return (moment - dt.datetime(1970, 1, 1)).days


def seconds_to_next_day(moment: dt.datetime) -> int:
    """Whole seconds from `moment` until the next UTC day begins, at least 1."""
    return max(1, DAY_S - int((moment - dt.datetime(1970, 1, 1)).total_seconds()) % DAY_S)


def count_one(session: Session, address: str, limit: int) -> None:
    """Count one registration from `address` today, in the caller's transaction; 429 TooManyRegistrations, with
    Retry-After until the next UTC day, when the address made `limit` already."""
    now = utcnow()
    if limit > 0:
        insert = postgresql_insert if is_postgresql(session) else sqlite_insert
        statement = insert(_COUNTS).values(client_address=address, epoch_day=epoch_day(now), registered=1)
        statement = statement.on_conflict_do_update(
            index_elements=[_COUNTS.c.client_address, _COUNTS.c.epoch_day],
            set_={"registered": _COUNTS.c.registered + 1},
            where=_COUNTS.c.registered < limit,
        )
        if session.execute(statement.returning(_COUNTS.c.registered)).first() is not None:
            return
    wait_s = seconds_to_next_day(now)
    raise errors.TooManyRegistrations(
        f"This address made {limit} account(s) today, the most a day allows; try again in {wait_s} s.",
        headers={"Retry-After": str(wait_s)},
        metadata={"registrations_per_day": limit},
    )


def forget_past_days(session: Session) -> int:
    """Drop the counts of the days before today (the sweeper's): the table holds one day's addresses."""
    dropped = session.execute(delete(RegistrationCount).where(RegistrationCount.epoch_day < epoch_day(utcnow())))
    return cast(CursorResult, dropped).rowcount
