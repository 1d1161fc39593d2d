"""The text API's answer bodies: request status, generations, and the pop's job."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlalchemy import Row, bindparam, select
from sqlalchemy.orm import Session

from horde.chat import queue as chat_queue
from horde.storage import precompiled
from horde.storage.database import table_of
from horde.text import queue, roster
from horde.text.models import CANCELLED, DONE, FAULTED, JOB_SUBMITTED, TextJob, TextRequest

if TYPE_CHECKING:
    from horde.config import Settings


def generation(job: TextJob | Row) -> dict:
    return {
        "id": job.id,
        "text": job.text or "",
        "seed": job.seed or 0,
        "worker_id": job.worker_id,
        "worker_name": job.worker_name,
        "model": job.model,
        "state": job.generation_state or "ok",
        "gen_metadata": job.gen_metadata or [],
    }


_JOBS = table_of(TextJob)
_SUBMITTED_JOBS = (
    select(_JOBS)
    .where(_JOBS.c.request_id == bindparam("request"), _JOBS.c.state == JOB_SUBMITTED)
    .order_by(_JOBS.c.ended_at, _JOBS.c.id)
)


def submitted_jobs(session: Session, request_id: str) -> list[Row]:
    """The request's generations in the order they landed, as rows (every column of text_jobs)."""
    return list(precompiled.execute(session.connection(), _SUBMITTED_JOBS, {"request": request_id}))


def status(session: Session, settings: Settings, request: TextRequest) -> dict:
    """RequestStatusKobold: counts by stage, the wait, and the generations so far."""
    ended = request.state in (DONE, FAULTED, CANCELLED)
    online = roster.online_now(session, settings.worker_online_window_s, request.models)
    threads = sum(worker.threads for worker in online)
    ahead = queue.position(session, request)
    job_s = queue.typical_job_s(session, settings.default_job_duration_s)
    wait_s = 0 if ended or not request.waiting else chat_queue.wait_estimate_s(ahead, threads, job_s)
    possible = ended or bool(
        [
            w
            for w in online
            if (w.text_max_length or 0) >= request.max_length
            and (w.text_max_context_length or 0) >= request.max_context_length
            and (not request.softprompt or request.softprompt in (w.softprompts or ()))
        ]
    )
    return {
        "finished": request.finished,
        "processing": request.processing,
        "restarted": request.restarted,
        "waiting": request.waiting,
        "done": request.state in (DONE, CANCELLED),
        "faulted": request.state == FAULTED,
        "wait_time": wait_s,
        "queue_position": ahead,
        "kudos": request.kudos_charged,
        "is_possible": possible,
        "generations": [generation(job) for job in submitted_jobs(session, request.id)],
    }


def job_payload(request: TextRequest | Row, count: int) -> dict:
    """ModelPayloadKobold: the request's params as the client sent them, the prompt, and n for this pop."""
    payload = dict(request.params)
    payload["prompt"] = request.prompt
    payload["n"] = count
    return payload
