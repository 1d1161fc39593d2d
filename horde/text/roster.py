"""The text workers as a text admission and its waiter see them: one Core statement, kept up to a second.

Every /v1/completions admission asks which online text workers serve its models (and
their owners' trust, and every model the Horde has heard of), how many generations
wait, and how long a job takes; its waiter asks again while the request waits. Read
afresh each time that was four to six statements a request; here it is one statement
a second per process (horde/chat/snapshots.py keeps it), taken again once this
process checks in a text worker with new declarations (CheckIns.generation). A
worker that checked in on another process may be missing from a view: a refusal or
a "no worker" warning is decided on a fresh read (`read`).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from sqlalchemy import Row, select
from sqlalchemy.orm import Session

from horde import precompiled
from horde.accounts.models import User
from horde.database import table_of
from horde.text import queue
from horde.timeutil import utcnow
from horde.workers.models import Worker

if TYPE_CHECKING:
    from horde.chat.snapshots import Snapshots

_WORKERS, _USERS = table_of(Worker), table_of(User)
#: Every worker's text declarations with its owner's trust, in one round trip. A row has the Worker columns by
#: name, so the checks read it as they would a Worker.
_ROSTER = select(
    _WORKERS.c.id,
    _WORKERS.c.name,
    _WORKERS.c.owner_id,
    _WORKERS.c.text_models,
    _WORKERS.c.text_max_length,
    _WORKERS.c.text_max_context_length,
    _WORKERS.c.threads,
    _WORKERS.c.softprompts,
    _WORKERS.c.nsfw,
    _WORKERS.c.text_pop_at,
    _USERS.c.trusted.label("owner_trusted"),
).join_from(_WORKERS, _USERS, _WORKERS.c.owner_id == _USERS.c.id)


def read(session: Session) -> list[Row]:
    """Every worker, fresh: its text declarations and last text pop, and its owner's trust (`owner_trusted`)."""
    return list(precompiled.execute(session.connection(), _ROSTER).all())


def cached(snapshots: Snapshots, session: Session, generation: int) -> list[Row]:
    """`read`, up to a second old, and read again once this process's text check-ins moved `generation`."""
    return snapshots.cached("text-roster", lambda: read(session), generation)


def online_among(workers: Iterable[Row], window_s: float, models: Sequence[str] | None = None) -> list[Row]:
    """Those whose last text pop is within the window, serving any of `models` (every one for none)."""
    cutoff, wanted = utcnow() - dt.timedelta(seconds=window_s), set(models or ())
    return [
        worker
        for worker in workers
        if worker.text_pop_at is not None
        and worker.text_pop_at >= cutoff
        and (not wanted or wanted.intersection(worker.text_models or ()))
    ]


def known_models(workers: Iterable[Row]) -> set[str]:
    """Every text model any worker declared on its last text pop."""
    names: set[str] = set()
    for worker in workers:
        names.update(worker.text_models or ())
    return names


def waiting_count(snapshots: Snapshots, session: Session, models: Sequence[str]) -> int:
    """queue.waiting_count, up to a second old: admission's estimates (the free allowance, the wait)."""
    key = ("text-waiting", tuple(sorted(set(models))))
    return snapshots.cached(key, lambda: queue.waiting_count(session, list(key[1])))


def typical_job_s(snapshots: Snapshots, session: Session, default_s: float) -> float:
    """queue.typical_job_s, up to a second old."""
    return snapshots.cached(("text-typical-job-s", default_s), lambda: queue.typical_job_s(session, default_s))
