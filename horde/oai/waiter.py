"""The waiter: follows one Horde request until it ends, as a stream of events.

Both the JSON answer and the SSE stream consume it: keepalives while waiting,
progress as workers post it, a restart when the job goes to another worker,
then the end (the finished request, or an error). It cancels the request when
no eligible worker is online for the grace period, or when a request in
availability_mode "wait" outlives its budget.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from horde import errors
from horde.chat import request_rows, service
from horde.chat.finish import Finish
from horde.chat.models import FINAL_STATES, PROCESSING, WAITING, ChatRequest
from horde.events.bus import Subscription, progress_channel, request_channel
from horde.events.drain import DRAIN
from horde.http.contract import DEFAULT_AVAILABILITY_MODE
from horde.timeutil import seconds_since

if TYPE_CHECKING:
    from horde.runtime import Runtime

GAP_CHECKS_PER_GRACE = 4
#: The longest a lost event can delay a waiter.
FULL_READ_S = 10.0
MIN_GAP_CHECK_S = 0.25


@dataclass
class Created:
    """A request as this call created it, and the subscription to its channel opened before the commit:
    no event of it can have been missed, so the waiter needs no first read."""

    request: ChatRequest
    subscription: Subscription


@dataclass
class FirstRead:
    """The request exists and has not ended at the first status read: headers may go out."""


@dataclass
class Keepalive:
    queue_position: int
    wait_time: int


@dataclass
class Progress:
    job_id: str | None
    content: str
    reasoning: str
    worker_id: str | None = None
    model: str | None = None


@dataclass
class Tick:
    """Nothing happened; lets a consumer look at its client (has it gone?) between events."""


@dataclass
class Restarted:
    """The job that was generating went back to the queue (or to another worker)."""


@dataclass
class Finished:
    request: ChatRequest


@dataclass
class Failed:
    error: errors.HordeError


def channels(request_id: str, *, progress: bool) -> tuple[str, ...]:
    """What a waiter listens to: the request's changes of state, and with `progress` (a stream) its job's
    start and progress too."""
    return (request_channel(request_id), progress_channel(request_id)) if progress else (request_channel(request_id),)


def watch(
    runtime: Runtime,
    request_id: str,
    *,
    availability_mode: str = DEFAULT_AVAILABILITY_MODE,
    keepalive_s: float | None = None,
    tick_s: float | None = None,
    created: Created | None = None,
    progress: bool = True,
) -> Iterator[object]:
    """Events of one request.

    The request row is read when an event arrives (every change publishes one) and, as a safety net
    for a lost event, every FULL_READ_S. Keepalives and gap checks use the last row read and the
    per-process snapshots; between them each `tick_s` yields a Tick that costs nothing. With `created`
    (a request this call has just created, listened to since before its commit) the first read is skipped,
    and so is the last when the submit that finished the request ran in this process and handed over its
    Finish (chat/finish.py).
    Without `progress` (a JSON answer) the job's start and progress wake nothing: the row may say waiting
    while a worker generates, which a gap check finds out before it acts (_still_waiting).
    """
    settings = runtime.settings
    keepalive_s = keepalive_s or settings.oai_keepalive_s
    tick_s = tick_s or keepalive_s
    gap_check_s = min(keepalive_s, max(settings.oai_no_worker_grace_s / GAP_CHECKS_PER_GRACE, MIN_GAP_CHECK_S))
    now = time.monotonic()
    # Admission has just found eligible workers: the first gap check can wait its turn.
    next_keepalive, next_gap_check, next_full_read = now + keepalive_s, now + gap_check_s, now
    no_worker_since = None
    seen_seq, seen_job = -1, None
    first, read, pool, request = True, created is None, None, None if created is None else created.request
    #: The prompt of a request this call created: with it, a finish handed over by a submit here is the answer.
    payload = None if created is None else created.request.payload
    if created is not None:
        next_full_read = now + max(FULL_READ_S, keepalive_s)
    listening = (
        created.subscription if created is not None else runtime.bus.subscribe(*channels(request_id, progress=progress))
    )
    with listening as subscription, DRAIN.waiter():
        while True:
            if DRAIN.ending:
                yield Failed(shutting_down(request_id))
                return
            now = time.monotonic()
            keepalive_due = now >= next_keepalive
            must_read = read or now >= next_full_read
            waiting = request is not None and request.state == WAITING
            gap_check_due = now >= next_gap_check
            gap = None
            if must_read or (waiting and (gap_check_due or keepalive_due)):
                # Never yield inside the session: the consumer's own transactions would wait on it.
                with runtime.db.read() as session:
                    if must_read:
                        request = request_rows.follow_request(session, request_id)
                        next_full_read = now + max(FULL_READ_S, keepalive_s)
                    waiting = request is not None and request.state == WAITING
                    if waiting and request is not None and (gap_check_due or keepalive_due):
                        next_gap_check = now + gap_check_s
                        window_s = settings.worker_online_window_s
                        eligible = runtime.snapshots.eligible(session, window_s, request)
                        no_worker_since = None if eligible else (no_worker_since or now)
                        pool = service.pool(session, settings, request, runtime.snapshots)
                        gap = _gap(settings, request, no_worker_since, availability_mode, pool["wait_time"])
                        if isinstance(gap, errors.NoEligibleWorker):
                            blocker = runtime.snapshots.limit_blocker(session, window_s, request)
                            gap = _limit_gap(request, blocker) or gap
                    elif not waiting:
                        pool = None
                del session  # a waiting stream holds no closed Session (and its identity map) between reads
            if must_read or first:
                if request is None:
                    yield Failed(errors.RequestNotFound(f"The request {request_id} is gone."))
                    return
                if request.state in FINAL_STATES:
                    yield Finished(request)
                    return
                if first:
                    first = False
                    yield FirstRead()
                if seen_job is not None and request.current_job_id != seen_job:
                    yield Restarted()
                seen_job = request.current_job_id
                if (
                    request.state == PROCESSING
                    and request.progress_seq != seen_seq
                    and request.progress_content is not None
                ):
                    seen_seq = request.progress_seq
                    yield Progress(
                        request.current_job_id,
                        request.progress_content or "",
                        request.progress_reasoning or "",
                        request.worker_id,
                        request.served_model,
                    )
            if gap is not None:
                if _still_waiting(runtime, request_id):
                    service.cancel(runtime, None, request_id, reason=gap)
                    yield Failed(gap)
                    return
                next_full_read = now  # the row moved on unheard (taken by a worker): read it before another check
            if keepalive_due:
                # On the stream's own cadence: a wake-up late by less than a period does not delay the next one.
                next_keepalive += keepalive_s
                if next_keepalive <= now:
                    next_keepalive = now + keepalive_s
                yield Keepalive(pool["queue_position"] if pool else 0, pool["wait_time"] if pool else 0)
            elif not read:
                yield Tick()
            deadline = min(
                next_keepalive, now + tick_s, next_full_read, next_gap_check if pool is not None else next_keepalive
            )
            read = subscription.wait(max(0.0, deadline - time.monotonic()))
            finish = subscription.take_handover() if read else None
            if isinstance(finish, Finish) and request is not None and payload is not None:
                yield Finished(finish.applied_to(request, payload))  # what a read would give, without it
                return


def shutting_down(request_id: str) -> errors.HordeError:
    return errors.ServerShuttingDown(
        f"This server process is shutting down. The request {request_id} stays queued on the Horde: retry with the "
        "same Idempotency-Key (or the SDK's retry) to follow it on another process.",
        metadata={"request_id": request_id},
        headers={"Retry-After": "1"},
    )


def _limit_gap(request, param: str | None):
    """Workers are online and would serve the request, but changed their declared lengths after the submit."""
    if param is None:
        return None
    what = (
        f"max_tokens {request.max_tokens}" if param == "max_tokens" else f"a context of {request.context_tokens} tokens"
    )
    return errors.NoWorkerSupportsLimit(
        f"The online workers for {', '.join(request.models)} changed their declarations after the request was "
        f"queued, and none accepts {what} any more.",
        param=param,
        metadata={"request_id": request.id},
    )


def _still_waiting(runtime, request_id: str) -> bool:
    """A gap found on the last row read is acted on only if the row still says waiting."""
    with runtime.db.read() as session:
        return request_rows.read_state(session, request_id) == WAITING


def _gap(settings, request, no_worker_since, availability_mode, wait_s: int):
    if no_worker_since is not None and time.monotonic() - no_worker_since >= settings.oai_no_worker_grace_s:
        return errors.NoEligibleWorker(
            f"No online worker can serve the request any more: the workers for {', '.join(request.models)} went "
            "offline or changed their declarations, and none came back within "
            f"{int(settings.oai_no_worker_grace_s)} s.",
            metadata={"request_id": request.id},
        )
    if (
        availability_mode == "wait"
        and not request.attempts
        and seconds_since(request.created_at) > settings.oai_wait_budget_s
    ):
        return errors.QueueUnavailable(
            f"No worker picked the request up within the wait budget of {int(settings.oai_wait_budget_s)} s.",
            metadata={"request_id": request.id, "budget_s": int(settings.oai_wait_budget_s)},
            headers={"Retry-After": str(max(1, wait_s))},
        )
    return None
