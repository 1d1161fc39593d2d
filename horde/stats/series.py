"""What a series counts: the served rows of one table, when each was served, its tokens and its model.

The chat and text domains each describe their rows here (horde/chat/stats.py, horde/text/stats.py); this package
knows no domain's tables. The statements over a series' raw rows are built once per series.
"""

from __future__ import annotations

import datetime as dt
import functools
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from sqlalchemy import ColumnElement, Date, DateTime, FromClause, Select, bindparam, func, literal, select
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.functions import FunctionElement

from horde.stats.models import ALL_MODELS

MINUTE = dt.timedelta(minutes=1)


def floor_minute(moment: dt.datetime) -> dt.datetime:
    return moment.replace(second=0, microsecond=0)


def ceil_minute(moment: dt.datetime) -> dt.datetime:
    floor = floor_minute(moment)
    return floor if floor == moment else floor + MINUTE


class SeriesName(StrEnum):
    """The series the stats keep: one per kind of work served."""

    CHAT = "chat"
    TEXT = "text"


class Span(StrEnum):
    """Which served rows a count takes."""

    EVERYTHING = "everything"  # all of them: the answer before a series' first rollup
    SINCE = "since"  # served at `start` or later
    BETWEEN = "between"  # served from `start` to before `end`


class minute_start(FunctionElement):
    """The start of the minute of a timestamp column, as a timestamp (naive UTC, as stored)."""

    type = DateTime()
    name = "minute_start"
    inherit_cache = True


@compiles(minute_start, "postgresql")
def _minute_start_postgresql(element: minute_start, compiler: Any, **kw: Any) -> str:
    return f"date_trunc('minute', {compiler.process(element.clauses, **kw)})"


@compiles(minute_start, "sqlite")
def _minute_start_sqlite(element: minute_start, compiler: Any, **kw: Any) -> str:
    return f"strftime('%Y-%m-%d %H:%M:00', {compiler.process(element.clauses, **kw)})"


def as_date(day: dt.date | dt.datetime | str) -> dt.date:
    """A day as the database returns it (SQLite's date() gives text) as a date."""
    if isinstance(day, dt.datetime):
        return day.date()
    if isinstance(day, dt.date):
        return day
    return dt.date.fromisoformat(str(day)[:10])


class day_start(FunctionElement):
    """The UTC day of a timestamp column, as a date."""

    type = Date()
    name = "day_start"
    inherit_cache = True


@compiles(day_start, "postgresql")
def _day_start_postgresql(element: day_start, compiler: Any, **kw: Any) -> str:
    return f"CAST({compiler.process(element.clauses, **kw)} AS DATE)"


@compiles(day_start, "sqlite")
def _day_start_sqlite(element: day_start, compiler: Any, **kw: Any) -> str:
    return f"date({compiler.process(element.clauses, **kw)})"


@dataclass(frozen=True, eq=False)
class ServedRows:
    """Rows of one table that count as served: `served` says which, `at` when, `tokens` how many tokens; with
    `model`, the series also keeps counts per model."""

    name: SeriesName
    at: ColumnElement
    served: ColumnElement
    tokens: ColumnElement
    model: ColumnElement | None = None
    #: The user a row was served to: with it, the rollup also adds each user's usage by day (user_usage_days).
    user: ColumnElement | None = None
    #: The tables `user` needs beyond the rows' own (a join), or None.
    joined: FromClause | None = None

    #: The statements of counts(), built at their first use.
    _counts: dict[tuple[Span, bool], Select] = field(default_factory=dict, init=False, repr=False)

    def counts(self, span: Span, *, per_model: bool = False) -> Select:
        """Count and tokens of the rows served in `span` (with `per_model`: model, count and tokens, per model);
        the same statement object on every call, so that its plan is kept."""
        statement = self._counts.get((span, per_model))
        if statement is None:
            statement = self._counts[span, per_model] = _in_span(self._counted(per_model), self.at, span)
        return statement

    @functools.cached_property
    def first_served(self) -> Select:
        """When the earliest served row was served (None: none yet)."""
        return select(func.min(self.at)).where(self.served)

    @functools.cached_property
    def minutes_between(self) -> Select:
        """Per minute (and model) from `start` to before `end`: the minute, the model, count and tokens."""
        minute = minute_start(self.at).label("minute")
        model = (self.model if self.model is not None else literal(ALL_MODELS)).label("model")
        grouped = (minute, model) if self.model is not None else (minute,)  # a constant in GROUP BY: an error
        return (
            select(minute, model, func.count(), func.coalesce(func.sum(self.tokens), 0))
            .where(self.served, self.at >= bindparam("start", type_=DateTime), self.at < _end())
            .group_by(*grouped)
        )

    @functools.cached_property
    def user_days_between(self) -> Select:
        """Per user and UTC day, from `start` to before `end`: the user, the day, count and tokens."""
        if self.user is None:
            raise TypeError(f"the {self.name} series keeps no usage per user")
        query = select(self.user, day_start(self.at), func.count(), func.coalesce(func.sum(self.tokens), 0))
        if self.joined is not None:
            query = query.select_from(self.joined)
        at_start = self.at >= bindparam("start", type_=DateTime)
        return query.where(self.served, at_start, self.at < _end()).group_by(self.user, day_start(self.at))

    def _counted(self, per_model: bool) -> Select:
        counted = (func.count(), func.coalesce(func.sum(self.tokens), 0))
        if not per_model:
            return select(*counted).where(self.served)
        if self.model is None:
            raise TypeError(f"the {self.name} series keeps no counts per model")
        return select(self.model, *counted).where(self.served).group_by(self.model)


def _in_span(query: Select, at: ColumnElement, span: Span) -> Select:
    if span is Span.EVERYTHING:
        return query
    query = query.where(at >= bindparam("start", type_=DateTime))
    return query.where(at < _end()) if span is Span.BETWEEN else query


def _end() -> ColumnElement:
    return bindparam("end", type_=DateTime)
