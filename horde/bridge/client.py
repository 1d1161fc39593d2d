"""The native Horde HTTP client of the worker: pop, progress, submit and fault.

It owns the retry rules, so that the loop reads as pop → run → submit: transient
errors (connection errors, 429, 5xx) are retried with bounded backoff; the Horde's
refusals are not, since re-sending the same body gets the same answer.
"""

from __future__ import annotations

import logging
import threading
import time

import requests

from horde.bridge import BRIDGE_AGENT

log = logging.getLogger(__name__)

API_PREFIX = "/api/v2"
POP_BACKOFF_MAX_S = 10.0
SUBMIT_MAX_ATTEMPTS = 10
SUBMIT_BACKOFF_MAX_S = 10.0
FAULT_MAX_ATTEMPTS = 5
REQUEST_TIMEOUT_S = 30.0
PROGRESS_TIMEOUT_S = 10.0
POP_TIMEOUT_MARGIN_S = 15.0
BACKOFF_FIRST_S = 0.5
#: rcs that mean the job is gone for this worker: drop it, never retry.
JOB_GONE_RCS = ("AbortedGen", "DuplicateGen", "JobNotFound")
#: The AI Horde's answer to a pop of a worker its owner put in maintenance (PUT /workers/{id}).
MAINTENANCE_RC = "WorkerMaintenance"


class HordeError(Exception):
    """A non-2xx answer from the Horde, with its `{"message", "rc"}` body."""

    def __init__(self, status: int, rc: str, message: str, param: str | None = None):
        super().__init__(f"HTTP {status} {rc}: {message}")
        self.status, self.rc, self.message, self.param = status, rc, message, param

    @property
    def transient(self) -> bool:
        """Worth asking again later: a rate limit, a server error, or the owner's maintenance (which ends)."""
        return self.status == 429 or self.status >= 500 or self.rc == MAINTENANCE_RC


class FatalHordeError(HordeError):
    """The Horde refuses this worker itself (key, name, declarations): popping again won't help."""


def _refuses_the_pop(exc: HordeError) -> bool:
    """A 400 about the submit's `pop` field: unknown to an older Horde, or declarations it refuses."""
    return exc.status == 400 and exc.param is not None and (exc.param == "pop" or exc.param.startswith("pop."))


def backoff_s(attempt: int, cap_s: float) -> float:
    """0.5, 1, 2, 4 … seconds, capped: quick on a blip, gentle on an outage."""
    return min(cap_s, BACKOFF_FIRST_S * (2**attempt))


class HordeClient:
    """One worker's connection to one Horde; safe to use from many threads."""

    def __init__(
        self, horde_url: str, api_key: str, stop_event: threading.Event | None = None, bridge_agent: str = BRIDGE_AGENT
    ):
        self.base_url = horde_url.rstrip("/") + API_PREFIX
        self.bridge_agent = bridge_agent
        self.api_key = api_key
        self.stop_event = stop_event or threading.Event()
        self._local = threading.local()
        self._last_skipped: dict | None = None
        #: Whether submits may carry the next pop; a Horde from before that extension refuses the field.
        self.submit_pops = True

    # -- transport ---------------------------------------------------------------

    def _session(self) -> requests.Session:
        session = getattr(self._local, "session", None)
        if session is None:
            session = requests.Session()
            session.headers.update({"apikey": self.api_key, "Content-Type": "application/json"})
            self._local.session = session
        return session

    def _post(self, path: str, body: dict, timeout_s: float) -> dict:
        response = self._session().post(self.base_url + path, json=body, timeout=timeout_s)
        if response.ok:
            try:
                return response.json() if response.content else {}
            except ValueError:
                raise HordeError(response.status_code, "BadResponse", response.text[:200]) from None
        try:
            error = response.json()
        except ValueError:
            error = {}
        if not isinstance(error, dict):
            error = {}
        rc = str(error.get("rc") or "HTTPError")
        message = str(error.get("message") or response.text[:200] or response.reason)
        param = error.get("param")
        raise HordeError(response.status_code, rc, message, param if isinstance(param, str) else None)

    def post(self, path: str, body: dict, timeout_s: float) -> dict:
        """One POST under /api/v2 (no retries): for loops that own their retry rules, like the text loop."""
        return self._post(path, body, timeout_s)

    # -- endpoints ---------------------------------------------------------------

    def pop(self, body: dict) -> dict | None:
        """One job, or None when the Horde has none (or we are stopping).

        Retries transient failures with backoff up to POP_BACKOFF_MAX_S for as long
        as the worker runs; raises FatalHordeError on a refusal of the worker itself.
        """
        attempt = 0
        timeout_s = float(body.get("wait") or 0) + POP_TIMEOUT_MARGIN_S
        while not self.stop_event.is_set():
            try:
                answer = self._post("/generate/chat/pop", body, timeout_s)
            except requests.RequestException as exc:
                log.warning("pop failed (%s); retrying", exc.__class__.__name__)
            except HordeError as exc:
                if not exc.transient:
                    raise FatalHordeError(exc.status, exc.rc, exc.message) from None
                log.warning("pop failed: %s; retrying", exc)
            else:
                if attempt:
                    log.info("the Horde answers pops again")
                if answer.get("id"):
                    return answer
                self._note_skipped(answer.get("skipped") or {})
                return None
            self.stop_event.wait(backoff_s(attempt, POP_BACKOFF_MAX_S))
            attempt += 1
        return None

    def _note_skipped(self, skipped: dict) -> None:
        """Say why no job came, once per change, so operators see why they get no work."""
        if skipped and skipped != self._last_skipped:
            log.info("no job; skipped: %s", ", ".join(f"{k}={v}" for k, v in sorted(skipped.items())))
        self._last_skipped = skipped

    def progress(self, job_id: str, content: str, reasoning_content: str) -> bool:
        """Post the whole text so far; True when the worker should stop (cancel or job gone)."""
        body = {"id": job_id, "content": content, "reasoning_content": reasoning_content}
        try:
            answer = self._post("/generate/chat/progress", body, PROGRESS_TIMEOUT_S)
        except requests.RequestException as exc:
            log.debug("progress post for %s failed: %s", job_id, exc)
            return False
        except HordeError as exc:
            if exc.status == 404 or exc.rc in JOB_GONE_RCS:
                log.info("job %s is gone (%s); stopping it", job_id, exc.rc)
                return True
            log.debug("progress post for %s refused: %s", job_id, exc)
            return False
        return bool(answer.get("cancel"))

    def submit(self, body: dict, next_pop: dict | None = None) -> dict | None:
        """Submit a reply, with `next_pop` asking for the next job in the same call; the Horde's answer
        (`reward`, and `next` when asked) when it accepted the reply, else None. Refusals are logged, not
        retried; a refusal of the `pop` field itself is answered by submitting again without it."""
        job_id = body.get("id")
        if next_pop is not None and self.submit_pops:
            body = dict(body, pop=next_pop)
        timeout_s = REQUEST_TIMEOUT_S + float((next_pop or {}).get("wait") or 0)
        for attempt in range(SUBMIT_MAX_ATTEMPTS):
            try:
                answer = self._post("/generate/chat/submit", body, timeout_s)
            except requests.RequestException as exc:
                log.warning("submit of %s failed (%s); retrying", job_id, exc.__class__.__name__)
            except HordeError as exc:
                if "pop" in body and _refuses_the_pop(exc):
                    body = {key: value for key, value in body.items() if key != "pop"}
                    self.submit_pops = self.submit_pops and exc.param != "pop"
                    log.warning(
                        "the Horde refused the pop carried by the submit of %s (%s); submitting alone", job_id, exc
                    )
                    continue
                if exc.transient:
                    log.warning("submit of %s failed: %s; retrying", job_id, exc)
                elif exc.rc == "ChatSubmitNonconformant":
                    log.warning("the Horde refused the reply to %s as nonconformant: %s", job_id, exc.message)
                    return None
                elif exc.status == 404 or exc.rc in JOB_GONE_RCS:
                    log.info("job %s dropped at submit: %s", job_id, exc)
                    return None
                else:
                    log.error("submit of %s refused: %s", job_id, exc)
                    return None
            else:
                log.info("submitted %s; reward %s", job_id, answer.get("reward"))
                return answer
            # Submits are retried even while stopping: the reply is already paid for.
            time.sleep(backoff_s(attempt, SUBMIT_BACKOFF_MAX_S))
        log.error("gave up submitting %s after %d attempts", job_id, SUBMIT_MAX_ATTEMPTS)
        return None

    @staticmethod
    def next_job(answer: dict | None) -> dict | None:
        """The job a submit's `next` holds, if any; a pop refused after the submit is logged (the popper's
        own pop meets the refusal again and handles it)."""
        following = (answer or {}).get("next")
        if not isinstance(following, dict):
            return None
        if following.get("rc"):
            log.warning("the pop carried by a submit was refused: %s %s", following.get("rc"), following.get("message"))
        return following if following.get("id") else None

    def fault(self, job_id: str, reason: str) -> bool:
        """Tell the Horde the job cannot be done, so it restarts it now rather than at its ttl."""
        body = {"id": job_id, "reason": reason}
        for attempt in range(FAULT_MAX_ATTEMPTS):
            try:
                self._post("/generate/chat/fault", body, REQUEST_TIMEOUT_S)
            except requests.RequestException as exc:
                log.warning("fault of %s failed (%s); retrying", job_id, exc.__class__.__name__)
            except HordeError as exc:
                if not exc.transient:
                    log.info("fault of %s refused: %s", job_id, exc)
                    return False
                log.warning("fault of %s failed: %s; retrying", job_id, exc)
            else:
                log.info("faulted %s: %s", job_id, reason)
                return True
            time.sleep(backoff_s(attempt, SUBMIT_BACKOFF_MAX_S))
        return False
