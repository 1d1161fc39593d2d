"""Which workers may serve which requests.

The same rules twice, by necessity: in Python for admission (to explain a gap
to the client) and in SQL for pop (to claim among thousands of queued requests
without loading them). tests/integration/chat/test_eligibility.py holds them together.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import ColumnElement, and_, exists, literal, or_, select

from horde.chat.models import WAITING, ChatRequest, ChatRequestModel
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


def queue_filter(worker: Worker | WorkerView, trusted: bool) -> ColumnElement[bool]:
    """SQL conditions under which a waiting request is eligible for `worker`."""
    missing_features = ALL_FEATURES_MASK & ~worker.features_mask
    missing_guarantees = ALL_GUARANTEES_MASK & ~worker.guarantees_mask
    conditions = [
        ChatRequest.state == WAITING,
        exists(
            select(literal(1)).where(
                and_(ChatRequestModel.request_id == ChatRequest.id, ChatRequestModel.model.in_(worker.models))
            )
        ),
        ChatRequest.max_tokens <= worker.max_length,
        ChatRequest.context_tokens <= worker.max_context_length,
        ChatRequest.required_features.op("&")(missing_features) == 0,
        ChatRequest.required_guarantees.op("&")(missing_guarantees) == 0,
        or_(ChatRequest.only_workers.is_(None), ChatRequest.only_workers.like(f"%|{worker.id}|%")),
    ]
    if not trusted:
        conditions.append(ChatRequest.trusted_only.is_(False))
    if worker.max_temperature_with_tools is not None:
        conditions.append(
            or_(
                ChatRequest.tools_temperature.is_(None),
                ChatRequest.tools_temperature <= worker.max_temperature_with_tools,
            )
        )
    return and_(*conditions)


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
