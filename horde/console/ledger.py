"""A user's ledger, newest first, a page at a time, each entry with the balance it left; and the balance at the end
of each day of a window.

The running balance costs what the page costs, whatever the history: the user's balance and the page's entries are
read by one statement (one snapshot: the balance is the sum of exactly the entries that statement sees), the page is
walked subtracting amounts, and the balance before its last entry travels in the signed cursor. An entry committed
after the first page with a time before the cursor's (a settlement whose statement ran across the read) is not
in that balance: the pages after it are off by its amount until the walk starts again (decision 0040).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from sqlalchemy import Select, bindparam, func, select, true, tuple_
from sqlalchemy.orm import Session

from horde.accounts import names
from horde.accounts.models import KudosEntry, User
from horde.console import cursor as cursors
from horde.stats.series import as_date, day_start
from horde.storage.database import Database, table_of
from horde.timeutil import utcnow

DEFAULT_LIMIT = 50
MAX_LIMIT = 200
#: The longest window of the balance history, in days.
MAX_DAYS = 90

_USERS = table_of(User)
_LEDGER = table_of(KudosEntry)
_COUNTERPARTS = _USERS.alias("counterpart")
#: Past every entry: the first page's bound.
_NEWEST = (dt.datetime(9999, 12, 31), 2**31 - 1)


def _page_statement() -> Select:
    """The user's balance with the page of entries before (`before_at`, `before_id`), newest first: one row with
    empty entry columns when the page is empty, none when the user does not exist."""
    entries = (
        select(
            _LEDGER.c.id,
            _LEDGER.c.created_at,
            _LEDGER.c.kind,
            _LEDGER.c.amount,
            _LEDGER.c.request_id,
            _LEDGER.c.counterpart_id,
        )
        .where(
            _LEDGER.c.user_id == bindparam("user_id"),
            tuple_(_LEDGER.c.created_at, _LEDGER.c.id) < tuple_(bindparam("before_at"), bindparam("before_id")),
        )
        .order_by(_LEDGER.c.created_at.desc(), _LEDGER.c.id.desc())
        .limit(bindparam("limit"))
        .subquery("page")
    )
    return (
        select(_USERS.c.kudos, entries, _COUNTERPARTS.c.username, _COUNTERPARTS.c.anonymous)
        .select_from(
            _USERS.outerjoin(entries, true()).outerjoin(_COUNTERPARTS, _COUNTERPARTS.c.id == entries.c.counterpart_id)
        )
        .where(_USERS.c.id == bindparam("user_id"))
        .order_by(entries.c.created_at.desc(), entries.c.id.desc())
    )


_PAGE = _page_statement()


def _history_statement() -> Select:
    """The user's balance with the sum of its entries per UTC day from `start` on (the days with any): one
    statement, one snapshot; one row with no day when the window has no entry, none when the user does not exist."""
    day = day_start(_LEDGER.c.created_at)
    sums = (
        select(day.label("day"), func.sum(_LEDGER.c.amount).label("total"))
        .where(_LEDGER.c.user_id == bindparam("user_id"), _LEDGER.c.created_at >= bindparam("start"))
        .group_by(day)
        .subquery("sums")
    )
    return (
        select(_USERS.c.kudos, sums.c.day, sums.c.total)
        .select_from(_USERS.outerjoin(sums, true()))
        .where(_USERS.c.id == bindparam("user_id"))
    )


_HISTORY = _history_statement()


@dataclass(frozen=True)
class Secret:
    """What signs the cursors: the database (its stored secret) and HORDE_SECRET_KEY when set."""

    db: Database
    configured: str | None


def page(session: Session, secret: Secret, user_id: int, limit: int, raw_cursor: str | None) -> dict:
    """A page of `user_id`'s ledger after `raw_cursor` (None: the newest entries), `limit` entries at most."""
    after = cursors.decode(secret.db, secret.configured, raw_cursor, user_id) if raw_cursor else None
    before_at, before_id = (after.created_at, after.entry_id) if after else _NEWEST
    rows = session.execute(
        _PAGE, {"user_id": user_id, "before_at": before_at, "before_id": before_id, "limit": limit + 1}
    ).all()
    balance = int(rows[0].kudos)
    found = [row for row in rows if row.id is not None]
    running = after.balance if after else balance
    entries = []
    for row in found[:limit]:
        entries.append(_entry(row, running))
        running -= int(row.amount)
    next_cursor = None
    if len(found) > limit:
        last = found[limit - 1]
        position = cursors.Cursor(user_id, last.created_at, int(last.id), running)
        next_cursor = cursors.encode(secret.db, secret.configured, position)
    return {"entries": entries, "next_cursor": next_cursor, "balance": balance}


def _entry(row, balance_after: int) -> dict:
    counterpart = None
    if row.counterpart_id is not None:
        alias = names.alias(row.username or "", row.counterpart_id, anonymous=bool(row.anonymous))
        counterpart = {"id": names.public_id(row.counterpart_id, anonymous=bool(row.anonymous)), "username": alias}
    return {
        "id": int(row.id),
        "created_at": row.created_at.isoformat(timespec="seconds") + "Z",
        "kind": row.kind,
        "amount": int(row.amount),
        "request_id": row.request_id,
        "counterpart": counterpart,
        "balance_after": balance_after,
    }


def balance_history(session: Session, user_id: int, days: int, now: dt.datetime | None = None) -> dict:
    """The closing balance of each of the last `days` UTC days, oldest first; today's is the balance now. One
    statement: the balance and a GROUP BY of the window's entries (read through the index by user and time)."""
    today = (now or utcnow()).date()
    first = today - dt.timedelta(days=days - 1)
    start = dt.datetime.combine(first + dt.timedelta(days=1), dt.time())
    rows = session.execute(_HISTORY, {"user_id": user_id, "start": start}).all()
    balance = int(rows[0].kudos)
    sums = {as_date(row.day): int(row.total) for row in rows if row.day is not None}
    closing = []
    for offset in range(days):
        day = today - dt.timedelta(days=offset)
        closing.append({"day": day.isoformat(), "balance": balance})
        balance -= sums.get(day, 0)
    closing.reverse()
    return {"days": closing}
