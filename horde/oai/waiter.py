"""The waiter: follows one Horde request until it ends, as a stream of events.

Both the JSON answer and the SSE stream consume it: keepalives while waiting,
progress as workers post it, a restart when the job goes to another worker,
then the end (the finished request, or an error). It cancels the request when
no eligible worker is online for the grace period, or when a request in
availability_mode "wait" outlives its budget.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from horde import errors
from horde.chat import service
from horde.chat.models import FINAL_STATES, PROCESSING, WAITING
from horde.events import request_channel
from horde.timeutil import seconds_since

MAX_TICK_S = 1.0


@dataclass
class FirstRead:
    """The request exists and has not ended at the first status read: headers may go out."""


@dataclass
class Keepalive:
    queue_position: int
    wait_time: int


@dataclass
class Progress:
    job_id: str
    content: str
    reasoning: str
    worker_id: str | None = None
    model: str | None = None


@dataclass
class Restarted:
    """The job that was generating went back to the queue (or to another worker)."""


@dataclass
class Finished:
    request: object


@dataclass
class Failed:
    error: errors.HordeError


def watch(runtime, request_id: str, *, availability_mode: str = "fail_fast", keepalive_s: float | None = None):
    settings = runtime.settings
    keepalive_s = keepalive_s or settings.oai_keepalive_s
    last_keepalive = time.monotonic()
    no_worker_since = None
    seen_seq, seen_job = -1, None
    first = True
    with runtime.bus.subscribe(request_channel(request_id)) as subscription:
        while True:
            # Never yield inside the transaction: the consumer's own transactions would wait on its lock.
            gap = pool = None
            with runtime.db.transaction() as session:
                request = session.get(service.ChatRequest, request_id)
                if request is not None and request.state == WAITING:
                    eligible = service.eligible_online(session, settings, request)
                    no_worker_since = None if eligible else (no_worker_since or time.monotonic())
                    pool = service.pool(session, settings, request)
                    gap = _gap(settings, request, no_worker_since, availability_mode, pool["wait_time"])
            if request is None:
                yield Failed(errors.RequestNotFound(f"The request {request_id} is gone."))
                return
            if request.state in FINAL_STATES:
                yield Finished(request)
                return
            if gap is not None:
                service.cancel(runtime, None, request_id, reason=gap)
                yield Failed(gap)
                return
            if first:
                first = False
                yield FirstRead()
            if seen_job is not None and request.current_job_id != seen_job:
                yield Restarted()
            seen_job = request.current_job_id
            if request.state == PROCESSING and request.progress_seq != seen_seq and request.progress_content is not None:
                seen_seq = request.progress_seq
                yield Progress(request.current_job_id, request.progress_content or "", request.progress_reasoning or "",
                               request.worker_id, request.served_model)
            if time.monotonic() - last_keepalive >= keepalive_s:
                last_keepalive = time.monotonic()
                yield Keepalive(pool["queue_position"] if pool else 0, pool["wait_time"] if pool else 0)
            remaining = keepalive_s - (time.monotonic() - last_keepalive)
            subscription.wait(max(0.0, min(remaining, MAX_TICK_S)))


def _gap(settings, request, no_worker_since, availability_mode, wait_s: int):
    if no_worker_since is not None and time.monotonic() - no_worker_since >= settings.oai_no_worker_grace_s:
        return errors.NoEligibleWorker(
            f"No online worker can serve the request any more: the workers for {', '.join(request.models)} went "
            f"offline or changed their declarations, and none came back within {int(settings.oai_no_worker_grace_s)} s.",
            metadata={"request_id": request.id})
    if availability_mode == "wait" and seconds_since(request.created_at) > settings.oai_wait_budget_s:
        return errors.QueueUnavailable(
            f"No worker picked the request up within the wait budget of {int(settings.oai_wait_budget_s)} s.",
            metadata={"request_id": request.id, "budget_s": int(settings.oai_wait_budget_s)},
            headers={"Retry-After": str(max(1, wait_s))})
    return None
