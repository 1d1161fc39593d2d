"""Queue counts, positions and wait estimates for text requests, from the database alone."""

from __future__ import annotations

import statistics
from types import SimpleNamespace

from sqlalchemy import ColumnElement, DateTime, Integer, Row, Select, bindparam, func, select
from sqlalchemy.orm import Session

from horde.chat.queue import served_before
from horde.queueing.model_rows import of_its_request
from horde.storage import precompiled
from horde.storage.database import table_of
from horde.text.models import ANY_MODEL, JOB_SUBMITTED, WAITING, TextJob, TextRequest, TextRequestModel

RECENT_JOBS_FOR_ESTIMATE = 50
_REQUESTS, _MODEL_ROWS, _JOBS = table_of(TextRequest), table_of(TextRequestModel), table_of(TextJob)
_WAITING = select(func.coalesce(func.sum(_REQUESTS.c.waiting), 0)).where(_REQUESTS.c.state == WAITING)
#: A request's place in bind parameters, for served_before.
_PLACE = SimpleNamespace(
    priority_class=bindparam("priority_class", type_=Integer),
    priority=bindparam("priority", type_=Integer),
    created_at=bindparam("created_at", type_=DateTime),
)


def _waiting_by_model_rows(*conditions: ColumnElement[bool]) -> Select:
    """The generations waiting of the requests that take one of `queue_models` (a request's models and ANY_MODEL)
    and meet `conditions` on their model rows: walked on the model rows' index, each request's count read by its key
    (a scalar subquery, never a join, which a planner without statistics turns into a read of every waiting request,
    those of models nobody serves included)."""
    waiting = of_its_request(_REQUESTS, _MODEL_ROWS, _REQUESTS.c.waiting, _REQUESTS.c.state == WAITING)
    rows = (
        select(_MODEL_ROWS.c.request_id, waiting.label("waiting"))
        .where(_MODEL_ROWS.c.model.in_(bindparam("queue_models", expanding=True)), *conditions)
        .distinct()
        .subquery()
    )
    return select(func.coalesce(func.sum(rows.c.waiting), 0))


#: Every admission reads this (the queue's wait, the free allowance): built once, the models in a bind parameter.
_WAITING_FOR_MODELS = _waiting_by_model_rows()
#: The same, of the requests served before a request's place.
_WAITING_AHEAD = _waiting_by_model_rows(served_before(_MODEL_ROWS.c, _PLACE))
_RECENT_DURATIONS = (
    select(_JOBS.c.started_at, _JOBS.c.ended_at)
    .where(_JOBS.c.state == JOB_SUBMITTED)
    .order_by(_JOBS.c.ended_at.desc())
    .limit(RECENT_JOBS_FOR_ESTIMATE)
)


def waiting_count(session: Session, models: list[str]) -> int:
    """Generations waiting for any of `models` or for any model (every waiting one for none)."""
    if not models:
        return precompiled.execute(session.connection(), _WAITING).scalar() or 0
    params = {"queue_models": [*models, ANY_MODEL]}
    return precompiled.execute(session.connection(), _WAITING_FOR_MODELS, params).scalar() or 0


def position(session: Session, request: TextRequest | Row) -> int:
    """Generations of waiting requests for the same models (or any model) served before this one (0 = next); for
    a request of any model, every waiting generation served before it."""
    if request.state != WAITING:
        return 0
    if not request.models:
        ahead = served_before(TextRequest, request)
        return session.scalar(_WAITING.where(ahead)) or 0
    params = {
        "queue_models": [*request.models, ANY_MODEL],
        "priority_class": request.priority_class,
        "priority": request.priority,
        "created_at": request.created_at,
    }
    return precompiled.execute(session.connection(), _WAITING_AHEAD, params).scalar() or 0


def typical_job_s(session: Session, default_s: float) -> float:
    rows = precompiled.execute(session.connection(), _RECENT_DURATIONS).all()
    durations = [(ended - started).total_seconds() for started, ended in rows if ended and started]
    return statistics.median(durations) if durations else default_s
