"""The text workers as a text admission and its waiter see them: one Core statement, kept up to a second.

Every /v1/completions admission asks which online text workers serve its models (and
their owners' trust, and every model the Horde has heard of), how many generations
wait, and how long a job takes; its waiter asks again while the request waits. Read
afresh each time that was four to six statements a request; here it is one statement
a second per process (horde/chat/snapshots.py keeps it), taken again once this
process checks in a text worker with new declarations (CheckIns.generation). A
worker that checked in on another process may be missing from a view: a refusal or
a "no worker" warning is decided on a fresh read (`read`).

Only the workers whose last text pop is within the online window are read: a Horde's
retired workers would make each read grow with its history. The models they declared
stay known (horde/text/known_models.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from sqlalchemy import Row, bindparam, select
from sqlalchemy.orm import Session

from horde.accounts.models import User
from horde.storage import precompiled
from horde.storage.database import table_of
from horde.text import queue
from horde.workers.models import Worker
from horde.workers.service import online_cutoff

if TYPE_CHECKING:
    from horde.chat.snapshots import Snapshots

_WORKERS, _USERS = table_of(Worker), table_of(User)
#: The text declarations of the workers whose last text pop is at or after `cutoff`, with their owners' trust, in
#: one round trip (by the index of text pops). A row has the Worker columns by name, so the checks read it as they
#: would a Worker.
_ROSTER = (
    select(
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
        _WORKERS.c.maintenance,
        _USERS.c.trusted.label("owner_trusted"),
    )
    .join_from(_WORKERS, _USERS, _WORKERS.c.owner_id == _USERS.c.id)
    .where(_WORKERS.c.text_pop_at >= bindparam("cutoff"))
)


def read(session: Session, window_s: float) -> list[Row]:
    """The online text workers, fresh: their text declarations and last text pop, and their owners' trust
    (`owner_trusted`)."""
    return list(precompiled.execute(session.connection(), _ROSTER, {"cutoff": online_cutoff(window_s)}).all())


def online_now(session: Session, window_s: float, models: Sequence[str] | None = None) -> list[Row]:
    """`read`, of those serving any of `models` (every one for none): the workers as they are now."""
    return online_among(read(session, window_s), window_s, models)


def cached(snapshots: Snapshots, session: Session, generation: int, window_s: float) -> list[Row]:
    """`read`, up to a second old, and read again once this process's text check-ins moved `generation`."""
    return snapshots.cached("text-roster", lambda: read(session, window_s), generation)


def online_among(workers: Iterable[Row], window_s: float, models: Sequence[str] | None = None) -> list[Row]:
    """Those whose last text pop is within the window, serving any of `models` (every one for none): a view up to
    a second old may hold a worker that left the window since."""
    cutoff, wanted = online_cutoff(window_s), set(models or ())
    return [
        worker
        for worker in workers
        if worker.text_pop_at is not None
        and worker.text_pop_at >= cutoff
        and (not wanted or wanted.intersection(worker.text_models or ()))
    ]


def declared_models(workers: Iterable[Row]) -> set[str]:
    """Every text model `workers` declared on their last text pop."""
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
