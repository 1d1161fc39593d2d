"""Short-lived, per-process views of the queue and the online workers.

Thousands of waiters ask the same two questions every few seconds: which online
workers could serve me, and where am I in the queue. One query per second per
model answers all of them; each waiter then looks itself up in memory.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import TypeVar

from sqlalchemy import select
from sqlalchemy.orm import Session

from horde.chat import queue, request_rows
from horde.chat.eligibility import (
    QUEUE_ORDER,
    breaks_limits,
    is_eligible,
    missing_declarations,
    need_of,
    passes_restrictions,
)
from horde.chat.models import WAITING, ChatRequest, ChatRequestModel
from horde.workers import service as workers
from horde.workers.models import Worker

SNAPSHOT_MAX_AGE_S = 1.0
#: Keys are per model set and per worker (a text worker's speed): bounded, everything is forgotten at once
#: rather than grow, and taken again within a second.
SNAPSHOT_MAX_ENTRIES = 10_000
T = TypeVar("T")


@dataclass
class _Entry:
    taken_at: float
    value: object
    version: object = None


class Snapshots:
    def __init__(self, max_age_s: float = SNAPSHOT_MAX_AGE_S, max_entries: int = SNAPSHOT_MAX_ENTRIES):
        self.max_age_s, self.max_entries = max_age_s, max_entries
        self._entries: dict = {}
        #: Keys being taken again right now, by how many callers.
        self._taking: dict[Hashable, int] = {}
        self._lock = threading.Lock()
        #: This process's committed changes of the chat queue (admissions, claims), for views of the queue to key
        #: by: they are taken again after such a change at once, and after another process's within max_age_s.
        self._queue_generation = 0
        #: The same, of the text queue.
        self._text_queue_generation = 0

    def queue_changed(self) -> None:
        """An admission or a claim of this process has changed the chat queue (called after its commit)."""
        self._queue_generation += 1

    def text_queue_changed(self) -> None:
        """An admission or a claim of this process has changed the text queue (called after its commit)."""
        self._text_queue_generation += 1

    def text_queue_view(self, key: Hashable, compute: Callable[[], T]) -> T:
        """A view of the text queue (an empty text pop's skipped counts, every waiting text request), kept as
        waiting_total is: taken again after this process's admissions and claims at once, after another
        process's within max_age_s."""
        return self.cached(("text-queue", key), compute, self._text_queue_generation)

    def cached(self, key: Hashable, compute: Callable[[], T], version: object = None) -> T:
        """compute(), or its value of less than max_age_s ago when it was taken at the same `version`. Other
        kinds (text) keep their own views here under keys of their own.

        While one caller takes an expired view again (its queries yield to other greenlets), the others get
        the expired value, if it is less than twice max_age_s old and of the same version, instead of
        running the same queries at once: under load a view expires with many callers waiting on it."""
        entry = self._entries.get(key)
        now = time.monotonic()
        if entry is not None and entry.version == version:
            age_s = now - entry.taken_at
            if age_s < self.max_age_s or (age_s < 2 * self.max_age_s and self._taking.get(key)):
                return entry.value
        with self._lock:
            self._taking[key] = self._taking.get(key, 0) + 1
        try:
            value = compute()
        finally:
            with self._lock:
                left = self._taking.pop(key) - 1
                if left:
                    self._taking[key] = left
        with self._lock:
            if key not in self._entries and len(self._entries) >= self.max_entries:
                self._entries.clear()
            self._entries[key] = _Entry(now, value, version)
        return value

    def roster(self, session: Session, generation: int, online_window_s: float) -> tuple[list[Worker], dict[int, bool]]:
        """Admission's roster (request_rows.roster): the online workers with their owners' trust, up to a second
        old, and taken again once this process has checked in a worker with new declarations (`generation`,
        CheckIns.generation). A worker that checked in on another process may be missing: admission reads
        the roster afresh before it refuses."""
        return self.cached("roster", lambda: request_rows.roster(session, online_window_s), generation)

    def online(self, session: Session, window_s: float) -> tuple[list[Worker], dict[int, bool]]:
        """(online workers, owner trust by owner id), detached from the session."""

        def compute():
            online = workers.online_workers(session, window_s)
            return online, workers.owners_trust(session, online)

        return self.cached(("online", window_s), compute)

    def eligible(self, session: Session, window_s: float, request: ChatRequest) -> list:
        online, trust = self.online(session, window_s)
        wanted, need = set(request.models), need_of(request)
        return [
            worker
            for worker in online
            if wanted.intersection(worker.models) and is_eligible(worker, need, trust.get(worker.owner_id, False))
        ]

    def typical_job_s(self, session: Session, default_s: float) -> float:
        return self.cached(("typical_job_s", default_s), lambda: queue.typical_job_s(session, default_s))

    def limit_blocker(self, session: Session, window_s: float, request: ChatRequest) -> str | None:
        """When online workers would serve the request but for their lengths: the param that no longer fits."""
        online, trust = self.online(session, window_s)
        wanted, need = set(request.models), need_of(request)
        capable = [
            worker
            for worker in online
            if wanted.intersection(worker.models)
            and not missing_declarations(worker, need)
            and not breaks_limits(worker, need)
            and passes_restrictions(worker, need, trust.get(worker.owner_id, False))
        ]
        if not capable:
            return None
        if not any(worker.max_length >= need.max_tokens for worker in capable):
            return "max_tokens"
        return "messages"

    def _queue(self, session: Session, models: list[str]) -> dict[str, int]:
        """Request id -> position among the waiting requests that accept any of `models`."""
        key = ("queue", tuple(sorted(set(models))))

        def compute():
            accepts = select(ChatRequestModel.request_id).where(ChatRequestModel.model.in_(list(key[1])))
            ids = session.scalars(
                select(ChatRequest.id)
                .where(ChatRequest.state == WAITING, ChatRequest.id.in_(accepts))
                .order_by(*QUEUE_ORDER)
            )
            return {request_id: index for index, request_id in enumerate(ids)}

        return self.cached(key, compute)

    def position(self, session: Session, request: ChatRequest) -> int:
        """Waiting requests for the same models served before this one (0 = next)."""
        if request.state != WAITING:
            return 0
        positions = self._queue(session, request.models)
        return positions.get(request.id, len(positions))

    def waiting(self, session: Session, models: list[str]) -> int:
        """How many requests wait for any of `models`: admission's estimates, one query a second."""
        return len(self._queue(session, models))

    def waiting_total(self, session: Session) -> int:
        """Every waiting chat request (an empty pop's `skipped.models`): counted again after this process's
        admissions and claims at once, after another process's within max_age_s."""
        return self.cached("waiting_total", lambda: queue.waiting(session), self._queue_generation)
