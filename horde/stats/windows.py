"""Served counts over windows that end now, exact to the row, in reads bounded by the rollup's lag.

The count of rows served from `start` on is: the raw rows from `start` to the next whole minute, plus the rolled
counts from that minute to the mark (the difference of two cumulative counts), plus the raw rows from the mark
on. The mark and the totals through it are read in one statement (one snapshot); the minutes before the mark
never change, and the raw rows are read by their served time, so a rollup that commits meanwhile moves nothing
this read counts. Raw rows read: at most a minute at each window's start and the rollup's lag at the end.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass

from sqlalchemy import and_, bindparam, select
from sqlalchemy.orm import Session

from horde.stats.models import ALL_MODELS, ServedMark, ServedMinute, ServedTotal
from horde.stats.series import ServedRows, Span, ceil_minute
from horde.storage import precompiled
from horde.storage.database import table_of

_MARKS = table_of(ServedMark)
_TOTALS = table_of(ServedTotal)
_MINUTES = table_of(ServedMinute)
_EARLIER = _MINUTES.alias("earlier")


@dataclass(frozen=True, slots=True)
class Counts:
    requests: int
    tokens: int

    def __add__(self, other: Counts) -> Counts:
        return Counts(self.requests + other.requests, self.tokens + other.tokens)

    def __sub__(self, other: Counts) -> Counts:
        return Counts(self.requests - other.requests, self.tokens - other.tokens)


NONE = Counts(0, 0)

#: The mark, and the series' totals through it for every model together: one snapshot.
_MARK_AND_TOTAL = (
    select(_MARKS.c.rolled_until, _TOTALS.c.requests, _TOTALS.c.tokens)
    .select_from(_MARKS)
    .outerjoin(_TOTALS, and_(_TOTALS.c.series == _MARKS.c.series, _TOTALS.c.model == ALL_MODELS))
    .where(_MARKS.c.series == bindparam("series"))
)
#: The mark, and the series' totals through it per model: one snapshot.
_MARK_AND_MODEL_TOTALS = (
    select(_MARKS.c.rolled_until, _TOTALS.c.model, _TOTALS.c.requests, _TOTALS.c.tokens)
    .select_from(_MARKS)
    .outerjoin(_TOTALS, and_(_TOTALS.c.series == _MARKS.c.series, _TOTALS.c.model != ALL_MODELS))
    .where(_MARKS.c.series == bindparam("series"))
)
#: Every model together: the counts served before the minute `before` (the latest minute row before it).
_CUMULATIVE_BEFORE = (
    select(_MINUTES.c.requests, _MINUTES.c.tokens)
    .where(
        _MINUTES.c.series == bindparam("series"),
        _MINUTES.c.model == ALL_MODELS,
        _MINUTES.c.minute < bindparam("before"),
    )
    .order_by(_MINUTES.c.minute.desc())
    .limit(1)
)
#: Per model with totals: the counts served before the minute `before`, each model's latest minute row found by
#: its key (a lookup per model, however long the history).
_CUMULATIVE_BEFORE_BY_MODEL = (
    select(_TOTALS.c.model, _MINUTES.c.requests, _MINUTES.c.tokens)
    .select_from(_TOTALS)
    .join(
        _MINUTES,
        and_(
            _MINUTES.c.series == _TOTALS.c.series,
            _MINUTES.c.model == _TOTALS.c.model,
            _MINUTES.c.minute
            == select(_EARLIER.c.minute)
            .where(
                _EARLIER.c.series == _TOTALS.c.series,
                _EARLIER.c.model == _TOTALS.c.model,
                _EARLIER.c.minute < bindparam("before"),
            )
            .order_by(_EARLIER.c.minute.desc())
            .limit(1)
            .scalar_subquery(),
        ),
    )
    .where(_TOTALS.c.series == bindparam("series"), _TOTALS.c.model != ALL_MODELS)
)


def served(
    session: Session, rows: ServedRows, windows_s: Mapping[str, int | None], now: dt.datetime
) -> dict[str, Counts]:
    """Per window (seconds back from `now`; None: all time), the count and tokens of `rows` served in it."""
    connection = session.connection()
    head = precompiled.execute(connection, _MARK_AND_TOTAL, {"series": rows.name}).first()
    mark = head.rolled_until if head is not None else None
    answer = {}
    if mark is None:  # before the series' first rollup
        for name, seconds in windows_s.items():
            answer[name] = _raw_since(
                connection, rows, None if seconds is None else now - dt.timedelta(seconds=seconds)
            )
        return answer
    rolled = Counts(int(head.requests or 0), int(head.tokens or 0))
    tail = _raw_since(connection, rows, mark)
    for name, seconds in windows_s.items():
        if seconds is None:
            answer[name] = rolled + tail
            continue
        start = now - dt.timedelta(seconds=seconds)
        if start >= mark:
            answer[name] = _raw_since(connection, rows, start)
            continue
        whole = ceil_minute(start)
        before = precompiled.execute(connection, _CUMULATIVE_BEFORE, {"series": rows.name, "before": whole}).first()
        edge = _raw_between(connection, rows, start, whole)
        answer[name] = edge + (rolled - (Counts(int(before[0]), int(before[1])) if before is not None else NONE)) + tail
    return answer


def served_by_model(
    session: Session, rows: ServedRows, windows_s: Mapping[str, int | None], now: dt.datetime
) -> dict[str, dict[str, int]]:
    """Per window, the count of `rows` served in it per model (models with none left out)."""
    connection = session.connection()
    head = precompiled.execute(connection, _MARK_AND_MODEL_TOTALS, {"series": rows.name}).all()
    mark = head[0].rolled_until if head else None
    answer = {}
    if mark is None:
        for name, seconds in windows_s.items():
            since = None if seconds is None else now - dt.timedelta(seconds=seconds)
            answer[name] = _nonzero(_raw_by_model_since(connection, rows, since))
        return answer
    rolled = {row.model: int(row.requests) for row in head if row.model is not None}
    tail = _raw_by_model_since(connection, rows, mark)
    for name, seconds in windows_s.items():
        if seconds is None:
            answer[name] = _nonzero(_added(rolled, tail))
            continue
        start = now - dt.timedelta(seconds=seconds)
        if start >= mark:
            answer[name] = _nonzero(_raw_by_model_since(connection, rows, start))
            continue
        whole = ceil_minute(start)
        before = {
            model: int(requests)
            for model, requests, _ in precompiled.execute(
                connection, _CUMULATIVE_BEFORE_BY_MODEL, {"series": rows.name, "before": whole}
            )
        }
        edge = _raw_by_model_between(connection, rows, start, whole)
        in_rolled = {model: count - before.get(model, 0) for model, count in rolled.items()}
        answer[name] = _nonzero(_added(_added(edge, in_rolled), tail))
    return answer


def _raw_since(connection, rows: ServedRows, start: dt.datetime | None) -> Counts:
    if start is None:
        row = precompiled.execute(connection, rows.counts(Span.EVERYTHING)).one()
    else:
        row = precompiled.execute(connection, rows.counts(Span.SINCE), {"start": start}).one()
    return Counts(int(row[0]), int(row[1]))


def _raw_between(connection, rows: ServedRows, start: dt.datetime, end: dt.datetime) -> Counts:
    if end <= start:
        return NONE
    row = precompiled.execute(connection, rows.counts(Span.BETWEEN), {"start": start, "end": end}).one()
    return Counts(int(row[0]), int(row[1]))


def _raw_by_model_since(connection, rows: ServedRows, start: dt.datetime | None) -> dict[str, int]:
    if start is None:
        return {
            model: int(count)
            for model, count, _ in precompiled.execute(connection, rows.counts(Span.EVERYTHING, per_model=True))
        }
    return {
        model: int(count)
        for model, count, _ in precompiled.execute(
            connection, rows.counts(Span.SINCE, per_model=True), {"start": start}
        )
    }


def _raw_by_model_between(connection, rows: ServedRows, start: dt.datetime, end: dt.datetime) -> dict[str, int]:
    if end <= start:
        return {}
    found = precompiled.execute(connection, rows.counts(Span.BETWEEN, per_model=True), {"start": start, "end": end})
    return {model: int(count) for model, count, _ in found}


def _added(first: Mapping[str, int], second: Mapping[str, int]) -> dict[str, int]:
    summed = dict(first)
    for model, count in second.items():
        summed[model] = summed.get(model, 0) + count
    return summed


def _nonzero(counts: Mapping[str, int]) -> dict[str, int]:
    return {model: count for model, count in counts.items() if count}
