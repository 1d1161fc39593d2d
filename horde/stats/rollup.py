"""The sweeper's rollup: a series' minutes that ended ROLLUP_LAG_S ago join its cumulative counts.

Every serving process's sweeper tries it; one process takes the mark (a row lock the others skip, never wait for)
and moves it by compare-and-set; the others find it taken or moved and leave it. The minutes and totals are
written in the mark's transaction: a reader that sees the mark sees the counts through it (windows.py reads both
in one statement).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable

from sqlalchemy import bindparam, insert, select, update
from sqlalchemy.orm import Session

from horde.stats import usage
from horde.stats.models import ALL_MODELS, ServedMark, ServedMinute, ServedTotal
from horde.stats.series import ServedRows, floor_minute
from horde.storage import precompiled
from horde.storage.database import Database, insert_ignoring_duplicates, table_of

#: A minute is rolled up once it ended this long ago. A row counts where it was served at its timestamp, which its
#: writer takes just before the statement that commits it: a row committed more than this after its timestamp
#: would land behind the mark and be missed by the windows. The Horde's finishing statements are single short
#: statements, and its hosts' clocks must agree within this.
ROLLUP_LAG_S = 120
#: The most one rollup covers: a database upgraded with a long history is rolled a day per sweep, each sweep's
#: work bounded by a day of rows, grouped by the database.
ROLLUP_SPAN_MAX = dt.timedelta(days=1)

_MARKS = table_of(ServedMark)
_TOTALS = table_of(ServedTotal)
_MINUTES = table_of(ServedMinute)

_MARK = select(_MARKS.c.rolled_until).where(_MARKS.c.series == bindparam("series"))
#: The mark, locked for this rollup, or no row while another process's rollup holds it (PostgreSQL; SQLite's one
#: writer already keeps the rollups apart): a sweeper never waits for another's rollup.
_MARK_UNLESS_TAKEN = _MARK.with_for_update(skip_locked=True)
_TOTALS_OF_SERIES = select(_TOTALS.c.model, _TOTALS.c.requests, _TOTALS.c.tokens).where(
    _TOTALS.c.series == bindparam("series")
)
_UPDATE_TOTAL = (
    update(_TOTALS)
    .where(_TOTALS.c.series == bindparam("b_series"), _TOTALS.c.model == bindparam("b_model"))
    .values(requests=bindparam("b_requests"), tokens=bindparam("b_tokens"))
)


def rollup_due(db: Database, rows: ServedRows, now: dt.datetime) -> bool:
    """Whether a minute of `rows`' series waits to be rolled up: a read, so that an idle sweep writes nothing
    (on SQLite a write transaction takes the database's one writer lock). The series' first sweep writes its
    mark row (None), in a statement of its own: the rollup's transaction then only locks an existing row."""
    with db.read() as session:
        mark = session.execute(_MARK, {"series": rows.name}).first()
    if mark is None:
        with db.autocommit() as session:
            insert_ignoring_duplicates(session, ServedMark, [{"series": rows.name, "rolled_until": None}], key="series")
        return True
    return mark.rolled_until is None or mark.rolled_until < _target(now)


def roll_up_when_due(db: Database, rows: ServedRows, now: dt.datetime) -> dt.datetime | None:
    """The sweeper's step: roll `rows`' series up when a minute waits (its own transaction); the mark it moved to,
    or None."""
    if not rollup_due(db, rows, now):
        return None
    with db.transaction() as session:
        return roll_up(session, rows, now)


def roll_up(session: Session, rows: ServedRows, now: dt.datetime) -> dt.datetime | None:
    """Roll `rows`' series up to the minute that ended ROLLUP_LAG_S before `now`, at most ROLLUP_SPAN_MAX at a
    time; in `session`'s transaction. Returns the mark it moved to; None when there was nothing to roll, or another
    process moved the mark first or is rolling the series now (its lock on the mark: this rollup does not wait)."""
    taken = session.execute(_MARK_UNLESS_TAKEN, {"series": rows.name}).first()
    if taken is None:
        return None
    mark, target = taken.rolled_until, _target(now)
    if mark is None:
        first = precompiled.execute(session.connection(), rows.first_served).scalar()
        start = floor_minute(first) if first is not None else target
    else:
        start = mark
    end = min(target, start + ROLLUP_SPAN_MAX)
    if end < start or (end == start and mark is not None):
        return None
    if not _move_mark(session, rows, mark, end):
        return None
    # Precompiled: the served state written into the SQL, which the partial index by end asks for.
    counted = precompiled.execute(session.connection(), rows.minutes_between, {"start": start, "end": end}).all()
    totals = {
        model: (requests, tokens)
        for model, requests, tokens in session.execute(_TOTALS_OF_SERIES, {"series": rows.name})
    }
    minutes, moved = _cumulative(counted, totals, per_model=rows.model is not None)
    if minutes:
        session.execute(insert(_MINUTES), [{"series": rows.name, **minute} for minute in minutes])
    if rows.user is not None:  # each user's usage by day, in the mark's transaction: counted once
        by_user = precompiled.execute(session.connection(), rows.user_days_between, {"start": start, "end": end})
        usage.add(session, by_user.all())
    _write_totals(session, rows, totals, moved)
    return end


def _target(now: dt.datetime) -> dt.datetime:
    return floor_minute(now - dt.timedelta(seconds=ROLLUP_LAG_S))


def _move_mark(session: Session, rows: ServedRows, mark: dt.datetime | None, end: dt.datetime) -> bool:
    """Compare-and-set of the mark from `mark` to `end`, on the row this transaction has locked."""
    unmoved = _MARKS.c.rolled_until.is_(None) if mark is None else _MARKS.c.rolled_until == mark
    moved = session.execute(update(_MARKS).where(_MARKS.c.series == rows.name, unmoved).values(rolled_until=end))
    return moved.rowcount == 1  # type: ignore[attr-defined]


def _cumulative(
    counted: Iterable, totals: dict[str, tuple[int, int]], *, per_model: bool
) -> tuple[list[dict], dict[str, tuple[int, int]]]:
    """The minute rows (cumulative counts from `totals` on) of the per-minute, per-model `counted`, for every
    model together and, `per_model`, for each; and the totals they reach, by model."""
    by_minute: dict[dt.datetime, list[tuple[str, int, int]]] = {}
    for minute, model, requests, tokens in counted:
        by_minute.setdefault(minute, []).append((model, int(requests), int(tokens)))
    reached = dict(totals)
    minutes = []
    for minute in sorted(by_minute):
        served = by_minute[minute]
        models = [(ALL_MODELS, sum(r for _, r, _ in served), sum(t for _, _, t in served))]
        if per_model:
            models += served
        for model, requests, tokens in models:
            before_requests, before_tokens = reached.get(model, (0, 0))
            reached[model] = (before_requests + requests, before_tokens + tokens)
            minutes.append(
                {"model": model, "minute": minute, "requests": reached[model][0], "tokens": reached[model][1]}
            )
    moved = {model: counts for model, counts in reached.items() if totals.get(model) != counts}
    return minutes, moved


def _write_totals(
    session: Session, rows: ServedRows, before: dict[str, tuple[int, int]], moved: dict[str, tuple[int, int]]
) -> None:
    """The totals through the new mark: the mark's compare-and-set holds off every other rollup of the series."""
    new = [
        {"series": rows.name, "model": model, "requests": requests, "tokens": tokens}
        for model, (requests, tokens) in moved.items()
        if model not in before
    ]
    changed = [
        {"b_series": rows.name, "b_model": model, "b_requests": requests, "b_tokens": tokens}
        for model, (requests, tokens) in moved.items()
        if model in before
    ]
    if new:
        session.execute(insert(_TOTALS), new)
    if changed:
        session.execute(_UPDATE_TOTAL, changed)
