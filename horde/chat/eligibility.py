"""Which workers may serve which requests.

The same rules twice, by necessity: in Python for admission (to explain a gap
to the client) and in SQL for pop (to claim among thousands of queued requests
without loading them). tests/integration/chat/test_eligibility.py holds them together.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    Boolean,
    ColumnElement,
    Float,
    Integer,
    String,
    and_,
    bindparam,
    cast,
    exists,
    literal,
    or_,
    select,
)

from horde.chat.models import WAITING, ChatRequest, ChatRequestModel
from horde.storage.database import like_planned_once, table_of
from horde.workers.checkins import WorkerView
from horde.workers.declarations import ALL_FEATURES_MASK, ALL_GUARANTEES_MASK, feature_names, guarantee_names
from horde.workers.models import Worker


@dataclass
class Need:
    """The parts of a request that eligibility looks at."""

    models: list[str]
    max_tokens: int
    context_tokens: int
    features: int
    guarantees: int
    tools_temperature: float | None
    only: list[str] | None
    trusted_only: bool


def missing_declarations(worker: Worker, need: Need) -> list[str]:
    missing = feature_names(need.features & ~worker.features_mask)
    missing += guarantee_names(need.guarantees & ~worker.guarantees_mask)
    return missing


def breaks_limits(worker: Worker, need: Need) -> bool:
    limit = worker.max_temperature_with_tools
    return need.tools_temperature is not None and limit is not None and need.tools_temperature > limit


def passes_restrictions(worker: Worker, need: Need, trusted: bool) -> bool:
    if need.only and worker.id not in need.only:
        return False
    return trusted or not need.trusted_only


def fits(worker: Worker, need: Need) -> bool:
    return worker.max_length >= need.max_tokens and worker.max_context_length >= need.context_tokens


#: A request's `only` list names the worker (bind parameter `only_pattern`, see worker_params).
LISTS_THE_WORKER = like_planned_once(table_of(ChatRequest).c.only_workers, bindparam("only_pattern", type_=String))


def _eligible_for_worker() -> ColumnElement[bool]:
    """The SQL form of the rules, with the worker's declarations as bind parameters (see worker_params).

    Built once: a statement that embeds it keeps one memoized cache key, instead of an expression tree
    rebuilt and hashed on every pop.
    """
    requests, request_models = table_of(ChatRequest).c, table_of(ChatRequestModel).c
    # Cast: PostgreSQL cannot tell the type of a parameter that is only compared with NULL.
    max_temperature = cast(bindparam("max_temperature_with_tools", type_=Float), Float)
    # Its own model rows, also where the outer statement walks the model rows (horde/chat/claim.py).
    serves = (
        select(literal(1))
        .where(
            request_models.request_id == requests.id,
            request_models.model.in_(bindparam("worker_models", expanding=True)),
        )
        .correlate_except(table_of(ChatRequestModel))
    )
    return and_(
        requests.state == WAITING,
        exists(serves),
        requests.max_tokens <= bindparam("max_length", type_=Integer),
        requests.context_tokens <= bindparam("max_context_length", type_=Integer),
        requests.required_features.op("&")(bindparam("missing_features", type_=Integer)) == 0,
        requests.required_guarantees.op("&")(bindparam("missing_guarantees", type_=Integer)) == 0,
        or_(requests.only_workers.is_(None), LISTS_THE_WORKER),
        or_(requests.trusted_only.is_(False), cast(bindparam("trusted", type_=Boolean), Boolean)),
        or_(
            requests.tools_temperature.is_(None),
            max_temperature.is_(None),
            requests.tools_temperature <= max_temperature,
        ),
    )


#: SQL conditions under which a waiting request is eligible for a worker; execute with worker_params().
ELIGIBLE_FOR_WORKER = _eligible_for_worker()


def worker_params(worker: Worker | WorkerView, trusted: bool) -> dict[str, Any]:
    """The bind parameters of ELIGIBLE_FOR_WORKER for `worker`."""
    return {
        "worker_models": list(worker.models),
        "max_length": worker.max_length,
        "max_context_length": worker.max_context_length,
        "missing_features": ALL_FEATURES_MASK & ~worker.features_mask,
        "missing_guarantees": ALL_GUARANTEES_MASK & ~worker.guarantees_mask,
        "only_pattern": f"%|{worker.id}|%",
        "trusted": trusted,
        "max_temperature_with_tools": worker.max_temperature_with_tools,
    }


QUEUE_ORDER = (ChatRequest.priority_class, ChatRequest.priority.desc(), ChatRequest.created_at, ChatRequest.id)


def need_of(request: ChatRequest) -> Need:
    return Need(
        models=list(request.models),
        max_tokens=request.max_tokens,
        context_tokens=request.context_tokens,
        features=request.required_features,
        guarantees=request.required_guarantees,
        tools_temperature=request.tools_temperature,
        only=request.only_worker_ids or None,
        trusted_only=request.trusted_only,
    )


def is_eligible(worker: Worker, need: Need, trusted: bool) -> bool:
    return (
        not missing_declarations(worker, need)
        and not breaks_limits(worker, need)
        and passes_restrictions(worker, need, trusted)
        and fits(worker, need)
    )
