"""The waiter of a text request (/v1/completions): the chat waiter's events, for text rows.

Keepalives carry the queue position and wait; `Generated` says more generations
finished (the stream sends each one as it lands); the end is Finished or Failed. It
cancels the request, running generations too, when no online text worker serves its
models for the grace period, or when availability_mode "wait" outlives its budget.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlalchemy import Row, bindparam, select

from horde import errors
from horde.chat import queue as chat_queue
from horde.events.bus import request_channel
from horde.oai.waiter import FULL_READ_S, Failed, FirstRead, Keepalive, Tick
from horde.storage import precompiled
from horde.storage.database import table_of
from horde.text import queue, roster, service
from horde.text.models import FINAL_STATES, WAITING, TextRequest
from horde.timeutil import seconds_since

if TYPE_CHECKING:
    from collections.abc import Iterator

    from horde.runtime import Runtime

_REQUESTS = table_of(TextRequest)
#: The waiter's read of its request, on every wake: a row (every column), never an ORM object.
_READ = select(_REQUESTS).where(_REQUESTS.c.id == bindparam("id_"))

__all__ = ["Failed", "Finished", "FirstRead", "Generated", "Keepalive", "Tick", "watch"]


@dataclass
class Generated:
    finished: int


@dataclass
class Finished:
    request: Row


def watch(
    runtime: Runtime, request_id: str, *, availability_mode: str = "fail_fast", tick_s: float | None = None
) -> Iterator[object]:
    settings = runtime.settings
    keepalive_s = settings.oai_keepalive_s
    tick_s = tick_s or keepalive_s
    now = time.monotonic()
    next_keepalive, next_read = now + keepalive_s, now
    no_worker_since, seen_finished, first, read = None, 0, True, True
    with runtime.bus.subscribe(request_channel(request_id)) as subscription:
        while True:
            now = time.monotonic()
            keepalive_due = now >= next_keepalive
            gap, pool = None, (0, 0)
            if read or keepalive_due or now >= next_read:
                with runtime.db.read() as session:
                    request = precompiled.execute(session.connection(), _READ, {"id_": request_id}).first()
                    if request is not None and request.state == WAITING:
                        window_s = settings.worker_online_window_s
                        workers = roster.cached(runtime.snapshots, session, runtime.text_checkins.generation, window_s)
                        online = roster.online_among(workers, window_s, request.models)
                        no_worker_since = None if online else (no_worker_since or now)
                        if keepalive_due:  # only a keepalive carries the queue position and wait
                            pool = _pool(runtime, session, request, online)
                        gap = _gap(settings, request, no_worker_since, availability_mode)
                next_read = now + FULL_READ_S
                if request is None:
                    yield Failed(errors.RequestNotFound(f"The request {request_id} is gone."))
                    return
                if request.finished > seen_finished:
                    seen_finished = request.finished
                    yield Generated(seen_finished)
                if request.state in FINAL_STATES:
                    yield Finished(request)
                    return
                if first:
                    first = False
                    yield FirstRead()
            if gap is not None:
                service.cancel(runtime, request_id, running=True, reason=gap)
                yield Failed(gap)
                return
            if keepalive_due:
                next_keepalive = now + keepalive_s
                yield Keepalive(*pool)
            elif not read:
                yield Tick()
            deadline = min(next_keepalive, now + tick_s, next_read)
            read = subscription.wait(max(0.0, deadline - time.monotonic()))


def _pool(runtime: Runtime, session, request: Row, online) -> tuple[int, int]:
    ahead = queue.position(session, request)
    threads = sum(worker.threads for worker in online)
    job_s = roster.typical_job_s(runtime.snapshots, session, runtime.settings.default_job_duration_s)
    return ahead, chat_queue.wait_estimate_s(ahead, threads, job_s)


def _gap(settings, request: Row, no_worker_since, availability_mode: str):
    if no_worker_since is not None and time.monotonic() - no_worker_since >= settings.oai_no_worker_grace_s:
        return errors.NoEligibleWorker(
            f"No online text worker can serve the request any more: the workers for "
            f"{', '.join(request.models) or 'any model'} went offline, and none came back within "
            f"{int(settings.oai_no_worker_grace_s)} s.",
            metadata={"request_id": request.id},
        )
    if (
        availability_mode == "wait"
        and not request.finished
        and not request.processing
        and seconds_since(request.created_at) > settings.oai_wait_budget_s
    ):
        return errors.QueueUnavailable(
            f"No worker picked the request up within the wait budget of {int(settings.oai_wait_budget_s)} s.",
            metadata={"request_id": request.id, "budget_s": int(settings.oai_wait_budget_s)},
        )
    return None
