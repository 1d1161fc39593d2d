"""Claiming: a worker takes the best eligible waiting request for one of its threads.

A claim runs on every pop, several times per completed request under load, so its statements are
built once with bind parameters (their cache keys are memoized on the objects) and run on the
session's connection: no ORM objects are loaded or flushed.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from sqlalchemy import bindparam, exists, func, insert, literal, select, true, update
from sqlalchemy.orm import Session

from horde.chat.eligibility import ELIGIBLE_FOR_WORKER, worker_params
from horde.chat.models import JOB_PROCESSING, PROCESSING, WAITING, ChatJob, ChatRequest, ChatRequestModel, new_id
from horde.config import Settings
from horde.database import table_of
from horde.timeutil import utcnow
from horde.workers.checkins import WorkerView
from horde.workers.declarations import FEATURE_BITS
from horde.workers.models import Worker

DEFAULT_REASONING_EFFORT = "medium"

_REQUESTS, _JOBS, _MODELS = table_of(ChatRequest), table_of(ChatJob), table_of(ChatRequestModel)
_QUEUE_ORDER = (
    _REQUESTS.c.priority_class,
    _REQUESTS.c.priority.desc(),
    _REQUESTS.c.created_at,
    _REQUESTS.c.id,
)
#: Whether any request waits for one of the worker's models (bind parameter `worker_models`): one index probe.
ANY_WAITING_FOR = exists(
    select(_MODELS.c.request_id).where(
        _MODELS.c.model.in_(bindparam("worker_models", expanding=True)),
        exists(select(literal(1)).where(_REQUESTS.c.id == _MODELS.c.request_id, _REQUESTS.c.state == WAITING)),
    )
)
_ANY_WAITING = select(ANY_WAITING_FOR)
#: SQLite (one writer at a time): the best eligible request, then its take (_TAKE) and its job (_NEW_JOB).
_BEST = (
    select(_REQUESTS.c.id, _REQUESTS.c.models, _REQUESTS.c.payload, _REQUESTS.c.context_tokens)
    .where(ELIGIBLE_FOR_WORKER)
    .order_by(*_QUEUE_ORDER)
    .limit(1)
)
#: PostgreSQL: the planner cannot estimate the bit-mask filters and would sort the whole queue; walking
#: ix_chat_requests_queue in order stops at the first eligible request instead. Local to the transaction,
#: and a column, so the pop sets it in the statement that looks at its queue (no round trip of its own).
WALK_THE_INDEX = func.set_config("enable_sort", "off", true())
#: What a take writes on the request, beside its served model.
_TAKE_VALUES = {
    "state": PROCESSING,
    "attempts": _REQUESTS.c.attempts + 1,
    "current_job_id": bindparam("job"),
    "worker_id": bindparam("worker"),
    "worker_name": bindparam("worker_name"),
    "progress_content": None,
    "progress_reasoning": None,
}
_TAKE = (
    update(_REQUESTS)
    .where(_REQUESTS.c.id == bindparam("request"), _REQUESTS.c.state == WAITING)
    .values(**_TAKE_VALUES, served_model=bindparam("model"))
)
_NEW_JOB = insert(_JOBS)
_JOB_COLUMNS = ("id", "request_id", "worker_id", "model", "state", "started_at", "deadline_at")
#: PostgreSQL: the first of the request's models that the worker serves (bind parameter `worker_models`), as claim()
#: chooses in Python on SQLite.
_SERVED_MODEL = (
    func.json_array_elements_text(_REQUESTS.c.models).table_valued("value", with_ordinality="position").render_derived()
)
_FIRST_SERVED_MODEL = (
    select(_SERVED_MODEL.c.value)
    .where(_SERVED_MODEL.c.value.in_(bindparam("worker_models", expanding=True)))
    .order_by(_SERVED_MODEL.c.position)
    .limit(1)
    .scalar_subquery()
)
_BEST_LOCKED = (
    select(_REQUESTS.c.id)
    .where(ELIGIBLE_FOR_WORKER)
    .order_by(*_QUEUE_ORDER)
    .limit(1)
    .with_for_update(skip_locked=True)
    .cte("best")
)
_TAKEN = (
    update(_REQUESTS)
    .where(_REQUESTS.c.id == _BEST_LOCKED.c.id, _REQUESTS.c.state == WAITING)
    .values(**_TAKE_VALUES, served_model=_FIRST_SERVED_MODEL)
    .returning(_REQUESTS.c.id, _REQUESTS.c.served_model, _REQUESTS.c.payload, _REQUESTS.c.context_tokens)
    .cte("taken")
)
_STARTED = (
    insert(_JOBS)
    .from_select(
        list(_JOB_COLUMNS),
        select(
            bindparam("job", type_=_JOBS.c.id.type),
            _TAKEN.c.id,
            bindparam("worker", type_=_JOBS.c.worker_id.type),
            _TAKEN.c.served_model,
            literal(JOB_PROCESSING, type_=_JOBS.c.state.type),
            bindparam("started_at", type_=_JOBS.c.started_at.type),
            bindparam("deadline_at", type_=_JOBS.c.deadline_at.type),
        ),
    )
    .returning(_JOBS.c.request_id)
    .cte("started")
)
#: PostgreSQL: a whole claim in one round trip. The best eligible request is locked (rows another claim holds
#: are skipped, so concurrent pops take different requests), taken by a compare-and-set from waiting, and its
#: job inserted; a row comes back only when the take and the insert both happened.
_CLAIM_IN_ONE_STATEMENT = select(_TAKEN.c.id, _TAKEN.c.served_model, _TAKEN.c.payload, _TAKEN.c.context_tokens).join(
    _STARTED, _STARTED.c.request_id == _TAKEN.c.id
)
#: The worker's running chat jobs, as a scalar subquery (bind parameter `worker`) that pop adds to its text jobs.
JOBS_IN_FLIGHT = (
    select(func.count())
    .where(_JOBS.c.worker_id == bindparam("worker"), _JOBS.c.state == JOB_PROCESSING)
    .scalar_subquery()
)


@dataclass(frozen=True)
class Claimed:
    """A job just claimed, with what its worker needs to run it."""

    job_id: str
    request_id: str
    model: str
    payload: dict
    context_tokens: int


def any_waiting_for(session: Session, models: list[str]) -> bool:
    """One index probe: decisive for a worker whose models have no queue at all."""
    return bool(session.connection().scalar(_ANY_WAITING, {"worker_models": list(models)}))


def claim(
    session: Session, settings: Settings, worker: Worker | WorkerView, trusted: bool, *, skip_locked: bool
) -> Claimed | None:
    """Claim the best eligible waiting request for `worker` (priority class, kudos, then age) and start its job.

    The request is taken by a compare-and-set from `waiting`, under its row lock on PostgreSQL (SQLite runs
    one writer at a time). The claim walks the queue in order: call it when any_waiting_for says the
    worker's models have a queue at all, or it walks every waiting request of other models. On PostgreSQL
    the transaction must have selected WALK_THE_INDEX first."""
    connection = session.connection()
    job_id, now = new_id(), utcnow()
    job = {"job": job_id, "worker": worker.id, "worker_name": worker.name}
    deadline_at = now + dt.timedelta(seconds=settings.job_ttl_s)
    if skip_locked:  # PostgreSQL: one round trip
        params = worker_params(worker, trusted) | job | {"started_at": now, "deadline_at": deadline_at}
        started = connection.execute(_CLAIM_IN_ONE_STATEMENT, params).first()
        if started is None:
            return None
        request_id, model, payload, context_tokens = started
        return Claimed(job_id, request_id, model, payload, context_tokens)
    row = connection.execute(_BEST, worker_params(worker, trusted)).first()
    if row is None:
        return None
    request_id, models, payload, context_tokens = row
    model = next(model for model in models if model in worker.models)
    if connection.execute(_TAKE, job | {"request": request_id, "model": model}).rowcount != 1:
        return None
    connection.execute(
        _NEW_JOB,
        {
            "id": job_id,
            "request_id": request_id,
            "worker_id": worker.id,
            "model": model,
            "state": JOB_PROCESSING,
            "started_at": now,
            "deadline_at": deadline_at,
        },
    )
    return Claimed(job_id=job_id, request_id=request_id, model=model, payload=payload, context_tokens=context_tokens)


def worker_payload(claimed: Claimed, worker: Worker | WorkerView) -> dict[str, Any]:
    payload = dict(claimed.payload)
    payload["max_context_length"] = claimed.context_tokens
    if "reasoning_effort" not in payload and worker.features_mask & FEATURE_BITS["reasoning_effort"]:
        payload["reasoning_effort"] = DEFAULT_REASONING_EFFORT
    return payload
