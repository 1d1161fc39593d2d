"""Queue counts, positions and wait estimates for text requests, from the database alone."""

from __future__ import annotations

import datetime as dt
import statistics

from sqlalchemy import func, literal, or_, select
from sqlalchemy.orm import Session

from horde.chat.queue import served_before
from horde.text.models import JOB_SUBMITTED, WAITING, TextJob, TextRequest, TextRequestModel
from horde.timeutil import utcnow

RECENT_JOBS_FOR_ESTIMATE = 50


def _accepts_any(models):
    """Requests for any of `models`, and requests that accept any model."""
    if not models:
        return literal(True)
    listed = (
        select(literal(1))
        .where(TextRequestModel.request_id == TextRequest.id, TextRequestModel.model.in_(list(models)))
        .exists()
    )
    any_model = ~select(literal(1)).where(TextRequestModel.request_id == TextRequest.id).exists()
    return or_(listed, any_model)


def waiting_count(session: Session, models: list[str]) -> int:
    return (
        session.scalar(
            select(func.coalesce(func.sum(TextRequest.waiting), 0)).where(
                TextRequest.state == WAITING, _accepts_any(models)
            )
        )
        or 0
    )


def created_since(session: Session, user_id: int, seconds: float, client_address: str | None = None) -> int:
    """Requests the user created in the last `seconds`; from `client_address` only, when given."""
    since = utcnow() - dt.timedelta(seconds=seconds)
    query = select(func.count(TextRequest.id)).where(TextRequest.user_id == user_id, TextRequest.created_at >= since)
    if client_address is not None:
        query = query.where(TextRequest.client_address == client_address)
    return session.scalar(query) or 0


def position(session: Session, request: TextRequest) -> int:
    """Generations of waiting requests for the same models served before this one (0 = next)."""
    if request.state != WAITING:
        return 0
    ahead = served_before(TextRequest, request)
    return (
        session.scalar(
            select(func.coalesce(func.sum(TextRequest.waiting), 0)).where(
                TextRequest.state == WAITING, _accepts_any(request.models), ahead
            )
        )
        or 0
    )


def typical_job_s(session: Session, default_s: float) -> float:
    rows = session.execute(
        select(TextJob.started_at, TextJob.ended_at)
        .where(TextJob.state == JOB_SUBMITTED)
        .order_by(TextJob.ended_at.desc())
        .limit(RECENT_JOBS_FOR_ESTIMATE)
    ).all()
    durations = [(ended - started).total_seconds() for started, ended in rows if ended and started]
    return statistics.median(durations) if durations else default_s
