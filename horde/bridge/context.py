"""The running side of a job: progress posts, cancellation and the one final answer.

A backend gets a `JobContext` with its job. It reports the whole text so far with
`report()` (throttled to about once a second, posted only for plain-text jobs of a
worker that declares `progress`) and learns from it when the request was cancelled.
The loop uses the same object to cancel a job at shutdown, and `claim_settlement()`
makes sure a job gets exactly one of submit or fault.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from horde.bridge.client import HordeClient
    from horde.bridge.job import Job

PROGRESS_INTERVAL_S = 1.0
CANCELLED_BY_HORDE = "the request was cancelled"


class JobContext:
    def __init__(
        self, job: Job, client: HordeClient, *, progress_enabled: bool, progress_interval_s: float = PROGRESS_INTERVAL_S
    ):
        self.job = job
        self._client = client
        self.progress_enabled = progress_enabled and job.is_plain_text
        self.progress_interval_s = progress_interval_s
        self.started_at = time.monotonic()
        self.deadline = self.started_at + job.ttl_s
        self.cancel_reason: str | None = None
        self.progress_posts = 0
        self._cancelled = threading.Event()
        self._lock = threading.Lock()
        self._settled = False
        self._last_post_at: float | None = None

    @property
    def cancelled(self) -> bool:
        return self._cancelled.is_set()

    def cancel(self, reason: str) -> None:
        with self._lock:
            if self.cancel_reason is None:
                self.cancel_reason = reason
        self._cancelled.set()

    def remaining_s(self) -> float:
        return self.deadline - time.monotonic()

    def report(self, content: str, reasoning_content: str = "", *, force: bool = False) -> bool:
        """Post the whole text so far when it is time to; True when the job should stop.

        Nothing is posted before there is text: an empty post tells the client nothing.
        """
        if self.cancelled:
            return True
        if not self.progress_enabled or not (content or reasoning_content):
            return False
        now = time.monotonic()
        if not force and self._last_post_at is not None and now - self._last_post_at < self.progress_interval_s:
            return False
        self._last_post_at = now
        self.progress_posts += 1
        if self._client.progress(self.job.id, content or "", reasoning_content or ""):
            self.cancel(CANCELLED_BY_HORDE)
        return self.cancelled

    def wait(self, seconds: float) -> bool:
        """Sleep, waking early on cancel; True when cancelled."""
        return self._cancelled.wait(max(0.0, seconds))

    def claim_settlement(self) -> bool:
        """True for the first caller only: the one that may submit or fault the job."""
        with self._lock:
            if self._settled:
                return False
            self._settled = True
            return True

    @property
    def settled(self) -> bool:
        with self._lock:
            return self._settled
