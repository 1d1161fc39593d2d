"""The rolled-up counts: a mark per series, its totals through the mark, and its cumulative counts by minute; each
user's usage by day, and the queue's samples by minute (the console's charts)."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import BigInteger, Date, DateTime, Integer, String
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


class UserUsageDay(Base):
    """What one user asked for on one UTC day: generations served to its requests (chat and text, both APIs) and
    their tokens. Added to by the rollup (rollup.py) in the mark's transaction, by arithmetic upserts: each served
    row counts once, whichever process rolls it, and these rows outlive the swept requests."""

    __tablename__ = "user_usage_days"

    user_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    day: Mapped[dt.date] = mapped_column(Date, primary_key=True)
    requests: Mapped[int] = mapped_column(BigInteger)
    tokens: Mapped[int] = mapped_column(BigInteger)


class QueueSample(Base):
    """The queue and the workers online for a model (ALL_MODELS: every model together) in one minute, as the
    housekeeping's sampler saw them (horde/console/sampler.py). The first process to write a minute's row wins; the
    sampler drops rows older than SAMPLES_KEPT."""

    __tablename__ = "queue_samples"

    minute: Mapped[dt.datetime] = mapped_column(DateTime, primary_key=True)
    model: Mapped[str] = mapped_column(String(200), primary_key=True)
    #: Requests (chat) and generations (text) waiting for the model.
    queued: Mapped[int] = mapped_column(Integer)
    #: Workers online that serve the model.
    workers: Mapped[int] = mapped_column(Integer)
