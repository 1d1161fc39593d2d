"""The jobs this process has just handed out, kept for their submit: a worker's submit usually comes back on
the connection its pop used, so to the same process, which then need not read the job and its request again.

What is kept never changes after the claim (the request's terms, the job's model, worker and owner); what may
change (the job's and the request's states, the charge) is compared and set by the submit's own statement,
exactly as after a fresh, unlocked read (lifecycle.accept_alone). A submit that finds nothing here reads.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from horde.chat.claim import Claimed
from horde.chat.models import PROCESSING

#: Bounded: a job never submitted here (its worker's submit went to another process, or never came) is
#: forgotten, oldest first, once this many newer ones are kept.
CLAIMED_JOBS_MAX_ENTRIES = 1_024
#: Larger prompts are read again at their submit rather than kept in memory until then.
CLAIMED_JOBS_MAX_CONTEXT_TOKENS = 8_192


@dataclass(frozen=True)
class SubmitView:
    """A claimed job and its request with the names lifecycle.read_for_submit's row has."""

    id: str
    user_id: int
    state: str
    models: list[str]
    payload: dict
    required_guarantees: int
    prompt_tokens: int
    max_tokens: int
    n_images: int
    kudos_charged: int
    kudos_estimate: int
    shared_key_id: str | None
    service_tier: str
    usage_multiplier: float
    attempts: int | None
    current_job_id: str
    job_id: str
    job_model: str
    job_worker_id: str
    owner_id: int


class ClaimedJobs:
    def __init__(self, max_entries: int = CLAIMED_JOBS_MAX_ENTRIES):
        self.max_entries = max_entries
        self._views: dict[str, SubmitView] = {}
        self._lock = threading.Lock()

    def remember(self, claimed: Claimed, worker_id: str, owner_id: int) -> None:
        """Keep a job this process claimed on PostgreSQL (one with `terms`) for its submit."""
        terms: dict[str, Any] | None = claimed.terms
        if terms is None or terms["n_images"] or claimed.context_tokens > CLAIMED_JOBS_MAX_CONTEXT_TOKENS:
            return
        view = SubmitView(
            id=claimed.request_id,
            state=PROCESSING,
            payload=claimed.payload,
            kudos_charged=0,
            attempts=None,  # the submit does not read it
            current_job_id=claimed.job_id,
            job_id=claimed.job_id,
            job_model=claimed.model,
            job_worker_id=worker_id,
            owner_id=owner_id,
            **terms,
        )
        with self._lock:
            while len(self._views) >= self.max_entries:
                del self._views[next(iter(self._views))]
            self._views[claimed.job_id] = view

    def take(self, job_id: str, owner_id: int) -> SubmitView | None:
        """The job as claimed here, forgotten now, when a worker of `owner_id` runs it; else None (read it)."""
        with self._lock:
            view = self._views.pop(job_id, None)
        return view if view is not None and view.owner_id == owner_id else None
