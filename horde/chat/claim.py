"""Claiming: a worker takes the best eligible waiting request for one of its threads.

A claim runs on every pop, several times per completed request under load, so its statements are
built once with bind parameters (their cache keys are memoized on the objects) and run on the
session's connection: no ORM objects are loaded or flushed.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    CTE,
    ColumnElement,
    Integer,
    Select,
    and_,
    bindparam,
    exists,
    func,
    insert,
    literal,
    select,
    true,
    union_all,
    update,
)
from sqlalchemy.orm import Session

from horde.chat import affinity
from horde.chat.eligibility import ELIGIBLE_FOR_WORKER, worker_params
from horde.chat.models import JOB_PROCESSING, PROCESSING, WAITING, ChatJob, ChatRequest, ChatRequestModel, new_id
from horde.config import Settings
from horde.queueing.model_rows import of_its_request, queue_order
from horde.storage import precompiled
from horde.storage.database import table_of
from horde.timeutil import utcnow
from horde.workers.checkins import WorkerView
from horde.workers.declarations import FEATURE_BITS
from horde.workers.models import Worker

DEFAULT_REASONING_EFFORT = "medium"

_REQUESTS, _JOBS, _MODELS = table_of(ChatRequest), table_of(ChatJob), table_of(ChatRequestModel)
#: Whether any request waits for one of the worker's models (bind parameter `worker_models`): a walk of their model
#: rows, each request's state read by its key. A scalar subquery, not a join: joined, a plan made for any models
#: (the walking pool's) read every waiting request, those of other models too, and probed their model rows.
ANY_WAITING_FOR = exists(
    select(_MODELS.c.request_id).where(
        _MODELS.c.model.in_(bindparam("worker_models", expanding=True)),
        of_its_request(_REQUESTS, _MODELS, _REQUESTS.c.state, true()) == WAITING,
    )
)
_ANY_WAITING = select(ANY_WAITING_FOR)
_BEST_COLUMNS = (_REQUESTS.c.id, _REQUESTS.c.models, _REQUESTS.c.payload, _REQUESTS.c.context_tokens)


#: The queue's order on the model rows: a worker of one model walks their index in order and stops at the first
#: request it may take; the requests of models it does not serve are never read (horde/queueing/model_rows.py).
_MODEL_ROW_ORDER = queue_order(_MODELS)
_OF_THE_WORKERS_MODELS = _MODELS.c.model.in_(bindparam("worker_models", expanding=True))


def _first_eligible(
    *conditions: ColumnElement[bool], columns: Sequence[Any], lock: bool, order: Sequence[Any] | None = None
) -> Select:
    """The first eligible request that meets `conditions` in `order` (locked, skipping rows another claim holds,
    with `lock`), or, by default, in the queue's order walked on the model rows of the worker's models: each row's
    request is probed by its key in a scalar subquery, never a join, which a planner without statistics turns into
    a read of every waiting request, those of other models included. There the model row is what is locked; the
    take is the request's compare-and-set (_claim_after)."""
    if order is not None:
        first = select(*columns).where(ELIGIBLE_FOR_WORKER, *conditions).order_by(*order).limit(1)
        return first.with_for_update(skip_locked=True, of=_REQUESTS) if lock else first
    eligible = of_its_request(_REQUESTS, _MODELS, _REQUESTS.c.id, and_(ELIGIBLE_FOR_WORKER, *conditions))
    row = select(_MODELS.c.request_id).where(_OF_THE_WORKERS_MODELS, eligible.is_not(None))
    row = row.order_by(*_MODEL_ROW_ORDER).limit(1)
    if lock:
        row = row.with_for_update(skip_locked=True, of=_MODELS)
    return select(*columns).where(_REQUESTS.c.id == row.scalar_subquery())


def _best(*gates: ColumnElement[bool], columns: Sequence[Any], lock: bool) -> Any:
    """The best request for the worker: the best eligible one reserved for it (a probe of the partial index of
    reservations), else the best eligible one that no other worker holds a reservation on (horde/chat/affinity.py).
    The second is not run when the first found one. `gates`: conditions of no row, which PostgreSQL checks once."""
    # The order of the reservations' index (the worker's id is the same on every row): the queue's index does not
    # give it, so no planner walks the whole queue by that index to spare a sort (SQLite, without statistics, did).
    reserved = _first_eligible(
        affinity.RESERVED_FOR_WORKER, *gates, columns=columns, lock=lock, order=affinity.RESERVED_ORDER
    ).subquery()
    free = _first_eligible(affinity.FREE_FOR_WORKER, *gates, columns=columns, lock=lock).subquery()
    return union_all(select(reserved), select(free)).limit(1)


#: SQLite (one writer at a time): the best request for the worker, then its take (_TAKE) and its job (_NEW_JOB).
_BEST = _best(columns=_BEST_COLUMNS, lock=False)
#: PostgreSQL: the planner cannot estimate the bit-mask filters and would sort the whole queue of the worker's
#: models; walking ix_chat_request_models_queue in order stops at the first eligible request instead. Local to
#: the transaction, and a column, so the pop sets it in the statement that looks at its queue (no round trip of
#: its own).
WALK_THE_INDEX = func.set_config("enable_sort", "off", true())
#: PostgreSQL: and each model row's request probed by its key, the model rows read by their index
#: (horde/storage/pg_engines.py WALKING_SETTINGS).
PROBE_BY_KEY = (func.set_config("enable_material", "off", true()), func.set_config("enable_seqscan", "off", true()))
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
#: PostgreSQL: what the claim also returns of the request for its submit (Claimed.terms).
TERMS_COLUMNS = (
    "user_id",
    "models",
    "required_guarantees",
    "prompt_tokens",
    "max_tokens",
    "n_images",
    "kudos_estimate",
    "shared_key_id",
    "service_tier",
    "usage_multiplier",
)
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


def _claim_after(best: CTE) -> Select:
    """PostgreSQL: the take of the request `best` (a CTE of one locked id) and its job's start, as a SELECT of
    what the worker needs; a row comes back only when the take and the insert both happened."""
    taken = (
        update(_REQUESTS)  # the chosen id as a value: a join with `best` may be planned as a walk of the waiting
        .where(_REQUESTS.c.id == select(best.c.id).scalar_subquery(), _REQUESTS.c.state == WAITING)
        .values(**_TAKE_VALUES, served_model=_FIRST_SERVED_MODEL)
        .returning(
            _REQUESTS.c.id,
            _REQUESTS.c.served_model,
            _REQUESTS.c.payload,
            _REQUESTS.c.context_tokens,
            *(_REQUESTS.c[name] for name in TERMS_COLUMNS),
        )
        .cte("taken")
    )
    started = (
        insert(_JOBS)
        .from_select(
            list(_JOB_COLUMNS),
            select(
                bindparam("job", type_=_JOBS.c.id.type),
                taken.c.id,
                bindparam("worker", type_=_JOBS.c.worker_id.type),
                taken.c.served_model,
                literal(JOB_PROCESSING, type_=_JOBS.c.state.type),
                bindparam("started_at", type_=_JOBS.c.started_at.type),
                bindparam("deadline_at", type_=_JOBS.c.deadline_at.type),
            ),
        )
        .returning(_JOBS.c.request_id)
        .cte("started")
    )
    return select(
        taken.c.id,
        taken.c.served_model,
        taken.c.payload,
        taken.c.context_tokens,
        *(taken.c[name] for name in TERMS_COLUMNS),
    ).join(started, started.c.request_id == taken.c.id)


def _best_locked(*gates: ColumnElement[bool]) -> CTE:
    """The best request for the worker (_best), locked; rows another claim holds are skipped, so concurrent pops
    take different requests."""
    return _best(*gates, columns=(_REQUESTS.c.id,), lock=True).cte("best")


#: PostgreSQL: a whole claim in one round trip. The best eligible request is locked, taken by a
#: compare-and-set from waiting, and its job inserted.
_CLAIM_IN_ONE_STATEMENT = _claim_after(_best_locked())


def look_and_claim_statement(busy: ColumnElement[int]) -> Select:
    """PostgreSQL: a pop's look and its claim in one round trip, for a pop that has nothing else to run.

    The look (`busy`, the worker's running jobs, and whether any request waits for its models) is a CTE read
    once; the claim walks the queue only when the worker has a free thread (bind parameter `threads`) and its
    models have a queue. One row always comes back: busy and queued, then the claimed request's id, model,
    payload, context tokens and terms (TERMS_COLUMNS), or nulls when nothing was claimed."""
    look = select(busy.label("busy"), ANY_WAITING_FOR.label("queued")).cte("look")
    free_thread = select(look.c.busy).scalar_subquery() < bindparam("threads", type_=Integer)
    queued = select(look.c.queued).scalar_subquery()
    claimed = _claim_after(_best_locked(free_thread, queued)).subquery("claimed")
    return select(look.c.busy, look.c.queued, *claimed.c).select_from(look.outerjoin(claimed, true()))


#: The worker's running chat jobs, as a scalar subquery (bind parameter `worker`) that pop adds to its text jobs.
JOBS_IN_FLIGHT = (
    select(func.count())
    .where(_JOBS.c.worker_id == bindparam("worker"), _JOBS.c.state == JOB_PROCESSING)
    .scalar_subquery()
)


@dataclass(frozen=True)
class Claimed:
    """A job just claimed, with what its worker needs to run it; on PostgreSQL also the request's `terms`
    (TERMS_COLUMNS), which never change after the claim: what a submit prices and checks the reply by."""

    job_id: str
    request_id: str
    model: str
    payload: dict
    context_tokens: int
    terms: dict[str, Any] | None = None

    @classmethod
    def of_row(cls, job_id: str, row: Sequence[Any]) -> Claimed:
        """From a row of _claim_after's SELECT."""
        request_id, model, payload, context_tokens, *terms = row
        return cls(job_id, request_id, model, payload, context_tokens, dict(zip(TERMS_COLUMNS, terms, strict=True)))


def any_waiting_for(session: Session, models: list[str]) -> bool:
    """One index probe: decisive for a worker whose models have no queue at all."""
    return bool(precompiled.execute(session.connection(), _ANY_WAITING, {"worker_models": list(models)}).scalar())


def claim(
    session: Session, settings: Settings, worker: Worker | WorkerView, trusted: bool, *, skip_locked: bool
) -> Claimed | None:
    """Claim the best eligible waiting request for `worker` (priority class, kudos, then age) and start its job.

    The request is taken by a compare-and-set from `waiting`, under its row lock on PostgreSQL (SQLite runs
    one writer at a time). The claim walks the queue in order: call it when any_waiting_for says the
    worker's models have a queue at all, or it walks every waiting request of other models. On PostgreSQL
    the transaction must have selected WALK_THE_INDEX first."""
    connection = session.connection()
    job_id, params = _job_params(settings, worker)
    if skip_locked:  # PostgreSQL: one round trip
        started = precompiled.execute(
            connection, _CLAIM_IN_ONE_STATEMENT, worker_params(worker, trusted) | params
        ).first()
        return None if started is None else Claimed.of_row(job_id, started)
    eligibility = worker_params(worker, trusted) | {"worker": worker.id, "now": params["now"]}
    row = precompiled.execute(connection, _BEST, eligibility).first()
    if row is None:
        return None
    request_id, models, payload, context_tokens = row
    model = next(model for model in models if model in worker.models)
    take = {"job": job_id, "worker": worker.id, "worker_name": worker.name, "request": request_id, "model": model}
    if precompiled.execute(connection, _TAKE, take).rowcount != 1:
        return None
    precompiled.execute(
        connection,
        _NEW_JOB,
        {
            "id": job_id,
            "request_id": request_id,
            "worker_id": worker.id,
            "model": model,
            "state": JOB_PROCESSING,
            "started_at": params["started_at"],
            "deadline_at": params["deadline_at"],
        },
    )
    return Claimed(job_id=job_id, request_id=request_id, model=model, payload=payload, context_tokens=context_tokens)


def look_and_claim(
    session: Session, settings: Settings, worker: Worker | WorkerView, trusted: bool, statement: Select
) -> tuple[int, bool, Claimed | None]:
    """PostgreSQL: run a look_and_claim_statement for `worker`: its busy threads, whether its models have a
    queue, and the job it claimed (None when it had no free thread, no queue, or no eligible request)."""
    job_id, params = _job_params(settings, worker)
    params |= worker_params(worker, trusted) | {"threads": worker.threads}
    busy, queued, *started = precompiled.execute(session.connection(), statement, params).one()
    claimed = None if started[0] is None else Claimed.of_row(job_id, started)
    return busy, bool(queued), claimed


def _job_params(settings: Settings, worker: Worker | WorkerView) -> tuple[str, dict[str, Any]]:
    """A new job's id, and the bind parameters of its take and start for `worker`."""
    job_id, now = new_id(), utcnow()
    deadline_at = now + dt.timedelta(seconds=settings.job_ttl_s)
    return job_id, {
        "job": job_id,
        "worker": worker.id,
        "worker_name": worker.name,
        "started_at": now,
        "deadline_at": deadline_at,
        "now": now,
    }


def worker_payload(claimed: Claimed, worker: Worker | WorkerView) -> dict[str, Any]:
    payload = dict(claimed.payload)
    payload["max_context_length"] = claimed.context_tokens
    if "reasoning_effort" not in payload and worker.features_mask & FEATURE_BITS["reasoning_effort"]:
        payload["reasoning_effort"] = DEFAULT_REASONING_EFFORT
    return payload
