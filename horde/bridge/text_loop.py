"""The text side of the worker: pop the AI Horde's text jobs, generate each id, submit.

It shares the stop flag with the chat loop. The Horde counts a worker's chat and text
jobs in flight together against its `threads` on either pop, so a worker serving both
kinds never gets more jobs than its threads; locally the text loop runs at most
`threads` text jobs. The pop long-polls for `wait_s` (the worker's --wait; `wait` is this
Horde's addition to the AI Horde's pop); with 0 an empty pop waits IDLE_POP_INTERVAL_S
before the next, as the AI Horde's workers do.
"""

from __future__ import annotations

import logging
import threading
from typing import Protocol

import requests

from horde.bridge.client import FatalHordeError, HordeClient, HordeError, backoff_s
from horde.bridge.declarations import Declarations
from horde.bridge.job import JobFault
from horde.bridge.text_job import TextJob, TextReply

log = logging.getLogger(__name__)

IDLE_POP_INTERVAL_S = 1.0
POP_TIMEOUT_MARGIN_S = 15.0
SUBMIT_TIMEOUT_S = 30.0
SUBMIT_MAX_ATTEMPTS = 10
BACKOFF_MAX_S = 10.0
SLOT_POLL_S = 0.1


class TextBackend(Protocol):
    def complete(self, job: TextJob) -> TextReply: ...


class TextLoop:
    def __init__(
        self,
        client: HordeClient,
        backend: TextBackend,
        declarations: Declarations,
        *,
        idle_s: float = IDLE_POP_INTERVAL_S,
        wait_s: float = 0.0,
    ):
        self.client = client
        self.backend = backend
        self.declarations = declarations
        self.slots = threading.BoundedSemaphore(declarations.threads)
        self.idle_s = idle_s
        self.wait_s = wait_s
        self.exit_code = 0
        self.jobs: list[threading.Thread] = []
        self._stop = client.stop_event

    def running_jobs(self) -> bool:
        """Whether a text job is being generated or submitted: a stopping worker waits for those, never for an
        idle pop (the Horde does not claim for a pop whose worker closed its connection)."""
        return any(thread.is_alive() for thread in self.jobs)

    def pop_body(self) -> dict:
        d = self.declarations
        return {
            "name": d.name,
            "models": list(d.models),
            "max_length": min(d.max_length, d.max_context_length),
            "max_context_length": d.max_context_length,
            "threads": d.threads,
            "amount": 1,
            "wait": self.wait_s,
            "bridge_agent": self.client.bridge_agent,
        }

    def run(self) -> int:
        attempt = 0
        try:
            while not self._stop.is_set():
                if not self.slots.acquire(timeout=SLOT_POLL_S):
                    continue
                try:
                    answer = self.client.post("/generate/text/pop", self.pop_body(), self.wait_s + POP_TIMEOUT_MARGIN_S)
                    attempt = 0
                except (requests.RequestException, HordeError) as exc:
                    self.slots.release()
                    if isinstance(exc, HordeError) and not exc.transient:
                        raise FatalHordeError(exc.status, exc.rc, exc.message) from None
                    log.warning("text pop failed (%s); retrying", exc)
                    self._stop.wait(backoff_s(attempt, BACKOFF_MAX_S))
                    attempt += 1
                    continue
                if not answer.get("id"):
                    self.slots.release()
                    if not self.wait_s:  # a long-poll has waited already
                        self._stop.wait(self.idle_s)
                    continue
                thread = threading.Thread(
                    target=self._run_job, args=(answer,), name=f"text-{answer['id']}", daemon=True
                )
                self.jobs.append(thread)
                thread.start()
        except FatalHordeError as exc:
            log.error("the Horde refuses this text worker: %s", exc)
            self.exit_code = 1
        for thread in self.jobs:
            thread.join(SUBMIT_TIMEOUT_S)
        return self.exit_code

    def _run_job(self, answer: dict) -> None:
        try:
            try:
                job = TextJob.from_pop(answer)
            except JobFault as exc:
                self._submit({"id": str(answer["id"]), "state": "faulted", "generation": exc.reason})
                return
            log.info(
                "text job %s: model %s, %d generation(s), max_length %d",
                job.ids[0],
                job.model,
                len(job.ids),
                job.max_length,
            )
            for job_id in job.ids:
                try:
                    body = self.backend.complete(job).submit_body(job_id)
                except JobFault as exc:
                    body = {"id": job_id, "state": "faulted", "generation": exc.reason}
                except Exception as exc:
                    log.exception("text job %s: the backend failed", job_id)
                    body = {"id": job_id, "state": "faulted", "generation": f"backend error: {exc}"}
                self._submit(body)
        finally:
            self.slots.release()

    def _submit(self, body: dict) -> None:
        for attempt in range(SUBMIT_MAX_ATTEMPTS):
            try:
                answer = self.client.post("/generate/text/submit", body, SUBMIT_TIMEOUT_S)
            except requests.RequestException as exc:
                log.warning("text submit of %s failed (%s); retrying", body["id"], exc.__class__.__name__)
            except HordeError as exc:
                if not exc.transient:
                    log.info("text submit of %s refused: %s", body["id"], exc)
                    return
                log.warning("text submit of %s failed: %s; retrying", body["id"], exc)
            else:
                log.info("submitted text %s (%s); reward %s", body["id"], body["state"], answer.get("reward"))
                return
            self._stop.wait(backoff_s(attempt, BACKOFF_MAX_S))
