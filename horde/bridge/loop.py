"""The worker loop: pop a job when a thread is free, run it on its own thread, settle it.

A popper thread long-polls the Horde and never holds more jobs than `threads`. Each
job runs on a plain thread and ends in exactly one submit or fault. A submit asks for
the next job in the same call (`pop`, without waiting); the thread runs that job in
turn, and frees its slot for the popper only when the submit brought none. The
main thread only watches for a stop: `request_stop()` sets a flag (safe to call from a
signal handler), after which no more jobs are popped, in-flight jobs get
`shutdown_grace_s` to finish, and the ones still running are faulted with
"worker shutting down" so the Horde restarts them at once instead of at their ttl.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING

from horde.bridge.client import FatalHordeError, HordeClient
from horde.bridge.context import PROGRESS_INTERVAL_S, JobContext
from horde.bridge.declarations import Declarations
from horde.bridge.job import Job, JobCancelled, JobFault, Reply

if TYPE_CHECKING:
    from horde.bridge.backends import Backend

log = logging.getLogger(__name__)

SHUTDOWN_GRACE_S = 5.0
SHUTDOWN_REASON = "worker shutting down"
POP_WAIT_DEFAULT_S = 20.0
#: With no long-poll, pop at most this often while the Horde has no job.
IDLE_POP_INTERVAL_S = 1.0
MAIN_POLL_S = 0.1
FAULT_REASON_MAX_CHARS = 1000


class WorkerLoop:
    def __init__(
        self,
        client: HordeClient,
        backend: Backend,
        declarations: Declarations,
        *,
        wait_s: float = POP_WAIT_DEFAULT_S,
        max_jobs: int | None = None,
        progress_interval_s: float = PROGRESS_INTERVAL_S,
        shutdown_grace_s: float = SHUTDOWN_GRACE_S,
    ):
        self.client = client
        self.backend = backend
        self.declarations = declarations
        self.wait_s = wait_s
        self.max_jobs = max_jobs
        self.progress_interval_s = progress_interval_s
        self.shutdown_grace_s = shutdown_grace_s
        self.exit_code = 0
        self.jobs_started = 0
        self._stop = client.stop_event
        self._stop_requested = False
        self._immediate = False
        self._slots = threading.BoundedSemaphore(declarations.threads)
        self._lock = threading.Lock()
        self._pops_in_flight = 0
        self._inflight: dict[str, tuple[threading.Thread, JobContext]] = {}
        self._popper_done = threading.Event()

    # -- control -------------------------------------------------------------------

    def request_stop(self, immediate: bool = False) -> None:
        """Ask the loop to stop; only sets flags, so a signal handler may call it."""
        self._immediate = self._immediate or immediate
        self._stop_requested = True

    @property
    def stop_requested(self) -> bool:
        return self._stop_requested

    def in_flight(self) -> int:
        with self._lock:
            return len(self._inflight)

    def _sync_stop(self) -> bool:
        if self._stop_requested and not self._stop.is_set():
            log.info("stopping: no more pops; %d job(s) in flight", self.in_flight())
            self._stop.set()
        return self._stop.is_set()

    def run(self) -> int:
        """Serve jobs until stopped, `max_jobs` is reached or the Horde refuses the worker."""
        d = self.declarations
        log.info(
            "worker %r serving %s: max_length=%d max_context_length=%d threads=%d features=%s guarantees=%s limits=%s",
            d.name,
            ", ".join(d.models),
            d.max_length,
            d.max_context_length,
            d.threads,
            ",".join(d.features) or "-",
            ",".join(d.guarantees) or "-",
            d.limits or "-",
        )
        popper = threading.Thread(target=self._pop_loop, name="horde-popper", daemon=True)
        popper.start()
        while not self._popper_done.wait(MAIN_POLL_S):
            if self._sync_stop():
                break
        self._drain()
        return self.exit_code

    # -- popping -------------------------------------------------------------------

    def _acquire_slot(self) -> bool:
        while not self._stop.is_set():
            if self._slots.acquire(timeout=MAIN_POLL_S):
                return True
        return False

    def _pop_loop(self) -> None:
        try:
            while not self._stop.is_set():
                if self.max_jobs is not None and self.jobs_started >= self.max_jobs:
                    break
                if not self._acquire_slot():
                    break
                if not self._pop_one():
                    self._slots.release()
        except FatalHordeError as exc:
            log.error("the Horde refuses this worker: %s", exc)
            self.exit_code = 1
        except Exception:
            log.exception("the pop loop failed")
            self.exit_code = 1
        finally:
            self._popper_done.set()

    def _pop_one(self) -> bool:
        """Pop once; True when a job thread took the slot."""
        if not self._claim_pop():
            self._stop.wait(MAIN_POLL_S)
            return False
        started = time.monotonic()
        accepted = None
        try:
            answer = self.client.pop(self.declarations.pop_body(self.wait_s))
            if answer is None:
                idle_s = IDLE_POP_INTERVAL_S - (time.monotonic() - started)
                if idle_s > 0:
                    self._stop.wait(idle_s)
                return False
            accepted = self._accept(answer)
        finally:
            self._end_pop(took_job=accepted is not None)
        if accepted is None:
            return False
        job, ctx = accepted
        thread = threading.Thread(target=self._run_jobs, args=(job, ctx), name=f"job-{job.id}", daemon=True)
        with self._lock:
            self._inflight[job.id] = (thread, ctx)
        thread.start()
        return True

    def _claim_pop(self) -> bool:
        """Whether one more pop may be sent: not while stopping, nor past `max_jobs` counting the pops in flight."""
        with self._lock:
            if self._stop.is_set():
                return False
            if self.max_jobs is not None and self.jobs_started + self._pops_in_flight >= self.max_jobs:
                return False
            self._pops_in_flight += 1
            return True

    def _end_pop(self, *, took_job: bool) -> None:
        with self._lock:
            self._pops_in_flight -= 1
            self.jobs_started += took_job

    def _accept(self, answer: dict) -> tuple[Job, JobContext] | None:
        """A popped job, ready to run; None when it went back to the Horde (stopping, malformed)."""
        if self._stop.is_set():
            self.client.fault(str(answer["id"]), SHUTDOWN_REASON)
            return None
        try:
            job = Job.from_pop(answer)
        except JobFault as exc:
            self.client.fault(str(answer["id"]), exc.reason)
            return None
        ctx = JobContext(
            job,
            self.client,
            progress_enabled="progress" in self.declarations.features,
            progress_interval_s=self.progress_interval_s,
        )
        log.info(
            "job %s: model %s, %d message(s), %d tool(s), format %s, ttl %ss",
            job.id,
            job.model,
            len(job.messages),
            len(job.tools),
            job.response_format_type,
            job.ttl_s,
        )
        return job, ctx

    # -- running -------------------------------------------------------------------

    def _run_jobs(self, job: Job, ctx: JobContext) -> None:
        """Run the job, then each job its submit brought, on this thread and slot."""
        try:
            while (following := self._run_job(job, ctx)) is not None:
                with self._lock:  # one swap, so the drain never sees this slot empty while it still works
                    self._inflight.pop(job.id, None)
                    job, ctx = following
                    self._inflight[job.id] = (threading.current_thread(), ctx)
        finally:
            with self._lock:
                self._inflight.pop(job.id, None)
            self._slots.release()

    def _run_job(self, job: Job, ctx: JobContext) -> tuple[Job, JobContext] | None:
        """Run one job and settle it; the next job when its submit brought one."""
        try:
            reply = self.backend.generate(job, ctx)
        except JobCancelled:
            log.info("job %s stopped: %s", job.id, ctx.cancel_reason or "cancelled")
            ctx.claim_settlement()
        except JobFault as exc:
            self._fault(ctx, exc.reason)
        except Exception as exc:
            log.exception("job %s: the backend failed", job.id)
            self._fault(ctx, f"backend error: {exc}")
        else:
            if ctx.claim_settlement():
                return self._submit(job, reply)
        return None

    def _submit(self, job: Job, reply: Reply) -> tuple[Job, JobContext] | None:
        """Submit the reply, asking in the same call for the next job (no long-poll: the popper does that)."""
        asking = self._claim_pop()
        accepted = None
        try:
            answer = self.client.submit(reply.submit_body(job.id), self.declarations.pop_body(0) if asking else None)
            following = self.client.next_job(answer) if asking else None
            if following is not None:
                accepted = self._accept(following)
        finally:
            if asking:
                self._end_pop(took_job=accepted is not None)
        return accepted

    def _fault(self, ctx: JobContext, reason: str) -> None:
        if ctx.claim_settlement():
            self.client.fault(ctx.job.id, reason[:FAULT_REASON_MAX_CHARS])

    # -- stopping ------------------------------------------------------------------

    def _drain(self) -> None:
        """Wait for in-flight jobs; once stopping, for `shutdown_grace_s` at most."""
        grace_deadline = None
        while True:
            with self._lock:
                live = list(self._inflight.values())
            if not live:
                return
            if self._sync_stop():
                now = time.monotonic()
                if grace_deadline is None:
                    grace_deadline = now + self.shutdown_grace_s
                if self._immediate:
                    grace_deadline = min(grace_deadline, now)
            if grace_deadline is not None and time.monotonic() >= grace_deadline:
                for _thread, ctx in live:
                    ctx.cancel(SHUTDOWN_REASON)
                    self._fault(ctx, SHUTDOWN_REASON)
                return
            live[0][0].join(MAIN_POLL_S)
