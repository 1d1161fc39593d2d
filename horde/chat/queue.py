"""Queue position and wait estimates, from the database alone."""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable
from typing import Any

from sqlalchemy import Select, and_, distinct, func, or_, select, true
from sqlalchemy.orm import Session
from sqlalchemy.sql.elements import ColumnElement

from horde.chat.models import JOB_SUBMITTED, PROCESSING, WAITING, ChatJob, ChatRequest, ChatRequestModel
from horde.queueing.model_rows import of_its_request
from horde.storage import precompiled
from horde.storage.database import table_of

RECENT_JOBS_FOR_ESTIMATE = 50
_WAITING = select(func.count()).where(table_of(ChatRequest).c.state == WAITING)
_JOBS = table_of(ChatJob)
#: The latest submitted jobs, walked backwards on their index by state and end (not every job ever submitted).
_RECENT_DURATIONS = (
    select(_JOBS.c.started_at, _JOBS.c.ended_at)
    .where(_JOBS.c.state == JOB_SUBMITTED)
    .order_by(_JOBS.c.ended_at.desc())
    .limit(RECENT_JOBS_FOR_ESTIMATE)
)


def typical_job_s(session: Session, default_s: float) -> float:
    """Median duration of the latest submitted jobs, or the default on a fresh Horde."""
    rows = precompiled.execute(session.connection(), _RECENT_DURATIONS).all()
    durations = [(ended - started).total_seconds() for started, ended in rows if ended and started]
    return statistics.median(durations) if durations else default_s


def _waiting_of_models(models: Iterable[str], *conditions: ColumnElement[bool]) -> Select:
    """How many waiting requests accept one of `models` (and meet `conditions` on their model rows): walked on the
    model rows' index, each request's state read by its key. A scalar subquery, never a join, which a planner
    without statistics (SQLite's) turns into a read of every waiting request, those of other models included."""
    requests, model_rows = table_of(ChatRequest), table_of(ChatRequestModel)
    state = of_its_request(requests, model_rows, requests.c.state, true())
    return select(func.count(distinct(ChatRequestModel.request_id))).where(
        ChatRequestModel.model.in_(list(models)), *conditions, state == WAITING
    )


def waiting(session: Session) -> int:
    """Every waiting chat request, whatever its models (a read of the whole queue)."""
    return precompiled.execute(session.connection(), _WAITING).scalar() or 0


def waiting_for_models(session: Session, models: Iterable[str]) -> int:
    return session.scalar(_waiting_of_models(models)) or 0


def served_before(table: Any, request: Any) -> ColumnElement[bool]:
    """The queue order as a filter: rows of `table` (chat or text requests, or their model rows, which copy their
    place) served before `request`."""
    return or_(
        table.priority_class < request.priority_class,
        and_(table.priority_class == request.priority_class, table.priority > request.priority),
        and_(
            table.priority_class == request.priority_class,
            table.priority == request.priority,
            table.created_at < request.created_at,
        ),
    )


def position(session: Session, request: ChatRequest) -> int:
    """How many waiting requests for the same models are served before this one (0 = next)."""
    if request.state != WAITING:
        return 0
    return session.scalar(_waiting_of_models(request.models, served_before(ChatRequestModel, request))) or 0


def wait_estimate_s(queued_ahead: int, threads: int, job_s: float) -> int:
    if threads <= 0:
        return 0
    return math.ceil((queued_ahead // threads + 1) * job_s)


def reserved_kudos(session: Session, user_id: int) -> int:
    """The estimates of the user's requests still waiting or processing: kudos their charges may yet take.

    Counted over the live requests only (the queue index leads with the state), so it stays cheap however
    long the user's history is.
    """
    return (
        session.scalar(
            select(func.coalesce(func.sum(ChatRequest.kudos_estimate), 0)).where(
                ChatRequest.state.in_((WAITING, PROCESSING)), ChatRequest.user_id == user_id
            )
        )
        or 0
    )
