"""Per-model status and the generation totals of the text API."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from horde.chat import queue as chat_queue
from horde.stats import windows
from horde.stats.series import SeriesName, ServedRows
from horde.storage.database import table_of
from horde.text import checkin, queue, roster
from horde.text.models import ANY_MODEL, JOB_SUBMITTED, WAITING, TextJob, TextRequest, TextRequestModel
from horde.timeutil import utcnow

if TYPE_CHECKING:
    from horde.config import Settings


PERIODS_S = {"minute": 60, "hour": 3600, "day": 86_400, "month": 30 * 86_400}

_JOBS = table_of(TextJob)
_TEXT_REQUESTS = table_of(TextRequest)
#: Text generations served: submitted jobs, when they ended, their tokens, per model, and the user who asked.
SERVED = ServedRows(
    name=SeriesName.TEXT,
    at=_JOBS.c.ended_at,
    served=_JOBS.c.state == JOB_SUBMITTED,
    tokens=_JOBS.c.tokens,
    model=_JOBS.c.model,
    user=_TEXT_REQUESTS.c.user_id,
    joined=_JOBS.join(_TEXT_REQUESTS, _TEXT_REQUESTS.c.id == _JOBS.c.request_id),
)


def model_status(session: Session, settings: Settings, name: str | None = None) -> list[dict]:
    """ActiveModel entries: workers, speed, queued tokens and generations, and the wait, per text model. A worker
    in maintenance is left out, as the AI Horde lists models: its clients see a model only while it is served."""
    online = roster.online_now(session, settings.worker_online_window_s)
    online = [worker for worker in online if not worker.maintenance]
    by_model: dict[str, list] = {}
    for worker in online:
        for model in worker.text_models or ():
            if name is None or model == name:
                by_model.setdefault(model, []).append(worker)
    job_s = queue.typical_job_s(session, settings.default_job_duration_s)
    entries = []
    for model in sorted(by_model):
        serving = by_model[model]
        jobs, tokens = _queued(session, model)
        threads = sum(worker.threads for worker in serving)
        speeds = [speed for speed in (checkin.tokens_per_s(session, worker.id) for worker in serving) if speed]
        entries.append(
            {
                "name": model,
                "count": len(serving),
                "performance": round(sum(speeds) / len(speeds), 2) if speeds else 0,
                "queued": tokens,
                "jobs": jobs,
                "eta": chat_queue.wait_estimate_s(jobs, threads, job_s) if jobs else 0,
                "type": "text",
                "threads": threads,
                "max_length": max(worker.text_max_length or 0 for worker in serving),
                "max_context_length": max(worker.text_max_context_length or 0 for worker in serving),
                "worker_ids": sorted(worker.id for worker in serving),
                "worker_names": sorted(worker.name for worker in serving),
            }
        )
    return entries


def _queued(session: Session, model: str) -> tuple[int, int]:
    """Waiting generations for `model` (or any model), and the tokens they ask for."""
    for_model = select(TextRequestModel.request_id).where(TextRequestModel.model.in_((model, ANY_MODEL)))
    row = session.execute(
        select(
            func.coalesce(func.sum(TextRequest.waiting), 0),
            func.coalesce(func.sum(TextRequest.waiting * TextRequest.max_length), 0),
        ).where(TextRequest.state == WAITING, TextRequest.id.in_(for_model))
    ).one()
    return int(row[0]), int(row[1])


def totals(session: Session) -> dict:
    """Generations ("requests") and tokens per minute, hour, day, month and in total."""
    counts = windows.served(session, SERVED, {**PERIODS_S, "total": None}, utcnow())
    return {name: {"requests": count.requests, "tokens": count.tokens} for name, count in counts.items()}


def per_model(session: Session) -> dict:
    """Generations per model in the past day, month and in total."""
    return windows.served_by_model(
        session, SERVED, {"day": PERIODS_S["day"], "month": PERIODS_S["month"], "total": None}, utcnow()
    )
