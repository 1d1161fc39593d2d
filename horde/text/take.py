"""Which waiting generation a worker's pop takes, and the take: one compare-and-set per generation.

The pop walks the model rows of the worker's models in the queue's order and stops at the first request it may
take, never reading the requests of other models (decision 0043, horde/queueing/model_rows.py). On PostgreSQL it
locks that model row, skipping those another pop holds; the take is the request's compare-and-set, which a pop
that loses it (another model's worker took the last generation) answers empty. Functions never commit.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, NamedTuple

from sqlalchemy import Row, bindparam, case, func, insert, select, update
from sqlalchemy.orm import Session

from horde.queueing.model_rows import of_its_request, queue_order
from horde.storage import precompiled
from horde.storage.database import table_of
from horde.text.checkin import TextWorkerView
from horde.text.eligibility import OF_THE_WORKERS_MODELS, TAKEABLE, Offer, offer_params
from horde.text.models import JOB_PROCESSING, PROCESSING, WAITING, TextJob, TextRequest, TextRequestModel, new_id
from horde.timeutil import utcnow

if TYPE_CHECKING:
    from horde.config import Settings

_REQUESTS, _JOBS = table_of(TextRequest), table_of(TextJob)
#: One waiting generation of request `id_` moves to processing: a compare-and-set, built once.
_TAKE_ONE = (
    update(_REQUESTS)
    .where(
        _REQUESTS.c.id == bindparam("id_"),
        _REQUESTS.c.state == WAITING,
        _REQUESTS.c.waiting > 0,
        _REQUESTS.c.cancelled.is_(False),
    )
    .values(
        waiting=_REQUESTS.c.waiting - 1,
        processing=_REQUESTS.c.processing + 1,
        state=case((_REQUESTS.c.waiting == 1, PROCESSING), else_=WAITING),
    )
)
_MODEL_ROWS = table_of(TextRequestModel)
#: The queue's order, on the model rows: a worker of one model walks their index in order and stops at the first
#: request it may take, never reading the requests of other models (horde/queueing/model_rows.py).
_MODEL_ROW_ORDER = queue_order(_MODEL_ROWS)
#: What a pop reads of the request it hands out: to choose the model, batch, and build the job's payload.
_NEXT_COLUMNS = (
    _REQUESTS.c.id,
    _REQUESTS.c.models,
    _REQUESTS.c.softprompt,
    _REQUESTS.c.disable_batching,
    _REQUESTS.c.prompt,
    _REQUESTS.c.params,
)
_NEXT = (
    select(*_NEXT_COLUMNS)
    .select_from(_MODEL_ROWS.join(_REQUESTS, _REQUESTS.c.id == _MODEL_ROWS.c.request_id))
    .where(OF_THE_WORKERS_MODELS, TAKEABLE)
    .order_by(*_MODEL_ROW_ORDER)
    .limit(1)
)
_INSERT_JOBS = insert(_JOBS)
#: PostgreSQL: rows another claim holds are skipped, so concurrent pops take different requests.
_NEXT_UNLOCKED = _NEXT.with_for_update(skip_locked=True, of=_REQUESTS)
#: The request of a model row, if the worker may take it: a scalar subquery, read by the request's key for each
#: model row walked. Never a join, which a planner without statistics, or with a plan made for any models, turns into
#: a read of every waiting request, those of other models included.
_TAKEABLE_REQUEST = of_its_request(_REQUESTS, _MODEL_ROWS, _REQUESTS.c.id, TAKEABLE)
#: The first model row of the worker's models in the queue's order whose request it may take. PostgreSQL: locked,
#: skipping the rows another pop holds, so concurrent pops take different requests (the take itself is the
#: request's compare-and-set, _TAKE_ONE).
_FIRST_TAKEABLE = (
    select(_MODEL_ROWS.c.request_id)
    .where(OF_THE_WORKERS_MODELS, _TAKEABLE_REQUEST.is_not(None))
    .order_by(*_MODEL_ROW_ORDER)
    .limit(1)
    .with_for_update(skip_locked=True, of=_MODEL_ROWS)
    .scalar_subquery()
)
_NEXT_BY_MODEL_ROWS = select(*_NEXT_COLUMNS).where(_REQUESTS.c.id == _FIRST_TAKEABLE)


def next_request(session: Session, offer: Offer, *, skip_locked: bool, prefer_users: list[int]) -> Row | None:
    """The best waiting request for the worker: its priority users first, then priority class, kudos, age."""
    if prefer_users:  # a statement of its own: run as SQLAlchemy runs it, never kept (precompiled keeps plans)
        query = (_NEXT_UNLOCKED if skip_locked else _NEXT).order_by(None)
        query = query.order_by(case((TextRequest.user_id.in_(prefer_users), 0), else_=1), *_MODEL_ROW_ORDER)
        return session.connection().execute(query, offer_params(offer)).first()
    return precompiled.execute(session.connection(), _NEXT_BY_MODEL_ROWS, offer_params(offer)).first()


class Claimed(NamedTuple):
    """The generations a pop took: their job ids (one or more) and the model they run on."""

    job_ids: list[str]
    model: str


def claim(session: Session, settings: Settings, request: Row, worker: TextWorkerView, amount: int) -> Claimed:
    """Take up to `amount` of the request's waiting generations for `worker`, one compare-and-set each
    (`request` is next_request's row)."""
    offered = list(worker.text_models)
    model = next((name for name in request.models or [] if name in offered), None) or offered[0]
    now = utcnow()
    job_ids = []
    connection = session.connection()
    for _ in range(amount):
        if precompiled.execute(connection, _TAKE_ONE, {"id_": request.id}).rowcount != 1:
            break
        job_ids.append(new_id())
    if job_ids:
        deadline = now + dt.timedelta(seconds=settings.job_ttl_s)
        rows = [
            {
                "id": job_id,
                "request_id": request.id,
                "worker_id": worker.id,
                "worker_name": worker.name,
                "model": model,
                "started_at": now,
                "deadline_at": deadline,
            }
            for job_id in job_ids
        ]
        precompiled.execute_many(connection, _INSERT_JOBS, rows)
    return Claimed(job_ids, model)


#: The worker's running text jobs, as a scalar subquery (bind parameter `worker`) built once.
JOBS_IN_FLIGHT = (
    select(func.count())
    .where(_JOBS.c.worker_id == bindparam("worker"), _JOBS.c.state == JOB_PROCESSING)
    .scalar_subquery()
)
