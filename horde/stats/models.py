"""The rolled-up counts: a mark per series, its totals through the mark, and its cumulative counts by minute."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import BigInteger, DateTime, String
from sqlalchemy.orm import Mapped, mapped_column

from horde.storage.database import Base

#: The model of a series' rows that count every model (the only rows of a series kept without models).
ALL_MODELS = ""


class ServedMark(Base):
    """Where a series' rollup stands: every row served before `rolled_until` is in its minutes and totals.

    None until the first rollup. Moved only by a compare-and-set, which makes the rollups of several processes
    take their turns (rollup.py)."""

    __tablename__ = "served_marks"

    series: Mapped[str] = mapped_column(String(16), primary_key=True)
    rolled_until: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)


class ServedTotal(Base):
    """A series' count and tokens through its mark, for every model together (ALL_MODELS) and per model."""

    __tablename__ = "served_totals"

    series: Mapped[str] = mapped_column(String(16), primary_key=True)
    model: Mapped[str] = mapped_column(String(200), primary_key=True)
    requests: Mapped[int] = mapped_column(BigInteger)
    tokens: Mapped[int] = mapped_column(BigInteger)


class ServedMinute(Base):
    """A series' count and tokens served before the end of `minute` (cumulative, not the minute's own), for a
    minute that served any: the count between two moments is a difference of two rows, whatever the span."""

    __tablename__ = "served_minutes"

    series: Mapped[str] = mapped_column(String(16), primary_key=True)
    model: Mapped[str] = mapped_column(String(200), primary_key=True)
    minute: Mapped[dt.datetime] = mapped_column(DateTime, primary_key=True)
    requests: Mapped[int] = mapped_column(BigInteger)
    tokens: Mapped[int] = mapped_column(BigInteger)
