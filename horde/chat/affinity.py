"""Conversation affinity: a conversation's next turn goes to the worker that served its last turn, which holds its
prompt in cache (docs/decisions/0029-conversation-affinity.md).

The state is the request rows themselves: a claim writes its worker on the request it takes (a compare-and-set
from waiting), so the conversation's worker is the worker of its latest taken request. Admission reads it in its
own INSERT and reserves the new request for that worker when the worker is among those eligible for it, until
`created_at + HORDE_AFFINITY_WAIT_MS`; the claim lets only that worker take a reserved request before then, and
that worker looks at its reserved requests first. After the reservation ends any eligible worker may take it (and
becomes the conversation's worker); a timer announces it then, since no other event would.
"""

from __future__ import annotations

import datetime as dt
import heapq
import logging
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from sqlalchemy import ColumnElement, String, bindparam, case, literal, or_, select

from horde.chat.models import ChatRequest
from horde.storage.database import table_of

_REQUESTS = table_of(ChatRequest)
log = logging.getLogger(__name__)

#: The worker that took the conversation's latest request (bind parameter `new_conversation_key`, the admitted
#: request's key), when it is listed in `affinity_workers` ("|id|id|": the workers eligible for the new request),
#: else NULL. One probe of ix_chat_requests_conversation, inside the admission's INSERT.
_LATEST = (
    select(_REQUESTS.c.worker_id)
    .where(
        _REQUESTS.c.conversation_key == bindparam("new_conversation_key", type_=String),
        _REQUESTS.c.worker_id.is_not(None),
    )
    .order_by(_REQUESTS.c.created_at.desc())
    .limit(1)
    .subquery("latest")
)
_CANDIDATES = bindparam("affinity_workers", type_=String)
RESERVED_AT_ADMISSION: ColumnElement[Any] = (
    select(case((_CANDIDATES.like(literal("%|") + _LATEST.c.worker_id + literal("|%")), _LATEST.c.worker_id)))
    .scalar_subquery()
    .label("reserved_worker_id")
)

#: The order of ix_chat_requests_reserved (horde/chat/models.py): the reserved worker, then the queue's order.
RESERVED_ORDER = (
    _REQUESTS.c.reserved_worker_id,
    _REQUESTS.c.priority_class,
    _REQUESTS.c.priority.desc(),
    _REQUESTS.c.created_at,
    _REQUESTS.c.id,
)
#: A claim's worker (bind parameter `worker`) and its time (`now`).
_WORKER = bindparam("worker", type_=String)
#: A waiting request reserved for the claiming worker: what its claim looks at first (ix_chat_requests_reserved).
RESERVED_FOR_WORKER = _REQUESTS.c.reserved_worker_id == _WORKER
#: A waiting request the claiming worker may take in the queue's order: not reserved for another worker, or no
#: longer (bind parameter `now`).
FREE_FOR_WORKER = or_(
    _REQUESTS.c.reserved_worker_id.is_(None),
    _REQUESTS.c.reserved_worker_id == _WORKER,
    _REQUESTS.c.reserved_until <= bindparam("now", type_=_REQUESTS.c.reserved_until.type),
)


def candidates(eligible: Iterable[Any], wait_ms: int) -> str:
    """The `affinity_workers` parameter of an admission: the ids of the workers eligible for the request, or none
    when affinity is off."""
    if wait_ms <= 0:
        return ""
    return "|" + "|".join(worker.id for worker in eligible) + "|"


def reserved_until(created_at: dt.datetime, wait_ms: int) -> dt.datetime | None:
    return created_at + dt.timedelta(milliseconds=wait_ms) if wait_ms > 0 else None


def worker_channel(worker_id: str) -> str:
    """Where a request reserved for the worker is announced: only that worker's pops listen."""
    return f"worker-jobs:{worker_id}"


class Wakeups:
    """Calls due at a time, run by one daemon thread (a greenlet under gevent): a reserved request's announcement
    to every worker of its models once its reservation ends. Bounded: at most `limit` calls wait; past it the
    earliest is run at once (the workers' long-polls also look again on their own every few seconds)."""

    def __init__(self, limit: int = 10_000):
        self._limit = limit
        self._due: list[tuple[float, int, Callable[[], None]]] = []
        self._count = 0
        self._changed = threading.Condition()
        self._thread: threading.Thread | None = None

    def at(self, monotonic_s: float, call: Callable[[], None]) -> None:
        with self._changed:
            self._count += 1
            heapq.heappush(self._due, (monotonic_s, self._count, call))
            overflow = heapq.heappop(self._due)[2] if len(self._due) > self._limit else None
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="affinity-wakeups", daemon=True)
                self._thread.start()
            self._changed.notify()
        if overflow is not None:
            _run_safely(overflow)

    def pending(self) -> int:
        with self._changed:
            return len(self._due)

    def _run(self) -> None:
        while True:
            with self._changed:
                while not self._due or self._due[0][0] > time.monotonic():
                    self._changed.wait(None if not self._due else max(0.0, self._due[0][0] - time.monotonic()))
                call = heapq.heappop(self._due)[2]
            _run_safely(call)


def _run_safely(call: Callable[[], None]) -> None:
    try:
        call()
    except Exception:  # an announcement that failed: the long-polls look again on their own
        log.exception("a reserved request's announcement failed")
