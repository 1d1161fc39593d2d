"""Queue counts, positions and wait estimates for text requests, from the database alone."""

from __future__ import annotations

import statistics

from sqlalchemy import Row, bindparam, exists, func, literal, or_, select
from sqlalchemy.orm import Session

from horde.chat.queue import served_before
from horde.storage import precompiled
from horde.storage.database import table_of
from horde.text.models import JOB_SUBMITTED, WAITING, TextJob, TextRequest, TextRequestModel

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


_REQUESTS, _REQUEST_MODELS, _JOBS = table_of(TextRequest), table_of(TextRequestModel), table_of(TextJob)
#: Every admission reads these (the queue's wait, the free allowance): built once, the models in a bind parameter.
_WAITING = select(func.coalesce(func.sum(_REQUESTS.c.waiting), 0)).where(_REQUESTS.c.state == WAITING)
_WAITING_FOR_MODELS = _WAITING.where(
    or_(
        exists(
            select(literal(1)).where(
                _REQUEST_MODELS.c.request_id == _REQUESTS.c.id,
                _REQUEST_MODELS.c.model.in_(bindparam("models", expanding=True)),
            )
        ),
        ~exists(select(literal(1)).where(_REQUEST_MODELS.c.request_id == _REQUESTS.c.id)),
    )
)
_RECENT_DURATIONS = (
    select(_JOBS.c.started_at, _JOBS.c.ended_at)
    .where(_JOBS.c.state == JOB_SUBMITTED)
    .order_by(_JOBS.c.ended_at.desc())
    .limit(RECENT_JOBS_FOR_ESTIMATE)
)


def waiting_count(session: Session, models: list[str]) -> int:
    """Generations waiting for any of `models` (every waiting one for none)."""
    if not models:
        return precompiled.execute(session.connection(), _WAITING).scalar() or 0
    return precompiled.execute(session.connection(), _WAITING_FOR_MODELS, {"models": list(models)}).scalar() or 0


def position(session: Session, request: TextRequest | Row) -> int:
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
    rows = precompiled.execute(session.connection(), _RECENT_DURATIONS).all()
    durations = [(ended - started).total_seconds() for started, ended in rows if ended and started]
    return statistics.median(durations) if durations else default_s
