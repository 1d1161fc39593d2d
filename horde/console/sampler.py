"""The queue's sampler: once a minute, the requests waiting and the workers online per model (and for every model
together), one row per (minute, model) in queue_samples, for the Status page's charts (series.py).

Every serving process's housekeeping calls it; the first process to write a minute's row of every model together
writes the minute (INSERT ... ON CONFLICT DO NOTHING on the key), and a process that finds the minute sampled
already reads nothing more. The
same call drops the samples older than SAMPLES_KEPT.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from typing import TYPE_CHECKING

from sqlalchemy import bindparam, delete, func, select
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import Session

from horde.chat import models as chat
from horde.stats.models import ALL_MODELS, QueueSample
from horde.stats.series import floor_minute
from horde.storage.database import is_postgresql, table_of
from horde.text import models as text
from horde.timeutil import utcnow
from horde.workers.models import Worker

if TYPE_CHECKING:
    from horde.runtime import Runtime

SAMPLES_KEPT = dt.timedelta(days=2)
#: The most models sampled in a minute: those with the most waiting first, then the most workers.
MAX_MODELS = 50

_SAMPLES = table_of(QueueSample)
_CHAT, _CHAT_MODELS = table_of(chat.ChatRequest), table_of(chat.ChatRequestModel)
_TEXT, _TEXT_MODELS = table_of(text.TextRequest), table_of(text.TextRequestModel)
_WORKERS = table_of(Worker)

_SAMPLED = select(_SAMPLES.c.minute).where(_SAMPLES.c.minute == bindparam("minute"), _SAMPLES.c.model == ALL_MODELS)
#: Waiting chat requests per model they accept (a request's model rows exist only while it is queued).
_CHAT_QUEUED = (
    select(_CHAT_MODELS.c.model, func.count())
    .select_from(_CHAT_MODELS.join(_CHAT, _CHAT.c.id == _CHAT_MODELS.c.request_id))
    .where(_CHAT.c.state == chat.WAITING)
    .group_by(_CHAT_MODELS.c.model)
)
_CHAT_QUEUED_ALL = select(func.count()).select_from(_CHAT).where(_CHAT.c.state == chat.WAITING)
#: Waiting text generations per model their request accepts.
_TEXT_QUEUED = (
    select(_TEXT_MODELS.c.model, func.coalesce(func.sum(_TEXT.c.waiting), 0))
    .select_from(_TEXT_MODELS.join(_TEXT, _TEXT.c.id == _TEXT_MODELS.c.request_id))
    .where(_TEXT.c.state == text.WAITING, _TEXT_MODELS.c.model != text.ANY_MODEL)
    .group_by(_TEXT_MODELS.c.model)
)
_TEXT_QUEUED_ALL = select(func.coalesce(func.sum(_TEXT.c.waiting), 0)).where(_TEXT.c.state == text.WAITING)
#: Live workers that popped chat or text within the online window, with what they declare.
_ONLINE = select(
    _WORKERS.c.id, _WORKERS.c.models, _WORKERS.c.last_pop_at, _WORKERS.c.text_models, _WORKERS.c.text_pop_at
).where(
    _WORKERS.c.deleted_at.is_(None),
    (_WORKERS.c.last_pop_at >= bindparam("cutoff")) | (_WORKERS.c.text_pop_at >= bindparam("cutoff")),
)


class Sampler:
    """A process's sampler: remembers the last minute it saw sampled, so that it reads once a minute at most."""

    def __init__(self) -> None:
        self.last_minute: dt.datetime | None = None

    def sample_when_due(self, runtime: Runtime, now: dt.datetime | None = None) -> bool:
        """Sample the current minute unless this process or another did; True when this call wrote it."""
        minute = floor_minute(now or utcnow())
        if minute == self.last_minute:
            return False
        self.last_minute = minute  # one try a minute: a failing one is logged once, and the next minute tries again
        with runtime.db.read() as session:
            if session.execute(_SAMPLED, {"minute": minute}).first() is not None:
                return False
            rows = take(session, minute, runtime.settings.worker_online_window_s)
        with runtime.db.transaction() as session:
            written = write(session, rows)
            session.execute(delete(_SAMPLES).where(_SAMPLES.c.minute < minute - SAMPLES_KEPT))
        return written


def take(session: Session, minute: dt.datetime, online_window_s: float) -> list[dict]:
    """The minute's rows: every model together (ALL_MODELS) and the MAX_MODELS busiest models."""
    queued: Counter[str] = Counter()
    for model, count in session.execute(_CHAT_QUEUED):
        queued[model] += int(count)
    for model, count in session.execute(_TEXT_QUEUED):
        queued[model] += int(count)
    all_queued = int(session.execute(_CHAT_QUEUED_ALL).scalar_one()) + int(
        session.execute(_TEXT_QUEUED_ALL).scalar_one()
    )
    cutoff = minute - dt.timedelta(seconds=online_window_s)
    workers: Counter[str] = Counter()
    online = 0
    for worker in session.execute(_ONLINE, {"cutoff": cutoff}):
        served: set[str] = set()
        if worker.last_pop_at is not None and worker.last_pop_at >= cutoff:
            served |= set(worker.models or ())
        if worker.text_pop_at is not None and worker.text_pop_at >= cutoff:
            served |= set(worker.text_models or ())
        online += 1
        workers.update(served)
    models = sorted(set(queued) | set(workers), key=lambda name: (-queued[name], -workers[name], name))
    rows = [{"minute": minute, "model": ALL_MODELS, "queued": all_queued, "workers": online}]
    rows += [
        {"minute": minute, "model": name, "queued": queued[name], "workers": workers[name]}
        for name in models[:MAX_MODELS]
    ]
    return rows


def write(session: Session, rows: list[dict]) -> bool:
    """Write the minute's rows unless a process did: the row of every model together (the first of `rows`) first,
    and the others only when it was this call's, in the caller's transaction. A process racing for the minute
    waits on that row's key until the other commits, then writes nothing: a minute's rows are one process's."""
    if not _inserted(session, rows[:1]):
        return False
    _inserted(session, rows[1:])
    return True


def _inserted(session: Session, rows: list[dict]) -> bool:
    """INSERT ... ON CONFLICT DO NOTHING of `rows`: whether any was written."""
    if not rows:
        return False
    insert = (postgresql_insert if is_postgresql(session) else sqlite_insert)(_SAMPLES).values(rows)
    statement = insert.on_conflict_do_nothing(index_elements=[_SAMPLES.c.minute, _SAMPLES.c.model])
    return bool(session.execute(statement.returning(_SAMPLES.c.model)).all())
