"""Which waiting text requests a worker may take, in SQL, and why the others were skipped.

The order of `CONDITIONS` is the order the skipped counts are attributed in: a request
counts once, under the first condition it fails.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Boolean, ColumnElement, String, and_, bindparam, case, exists, func, literal, not_, or_, select
from sqlalchemy.orm import Session

from horde.queueing.model_rows import of_its_request
from horde.storage import precompiled
from horde.storage.database import like_planned_once, table_of
from horde.text.checkin import TextWorkerView
from horde.text.models import ANY_MODEL, WAITING, TextRequest, TextRequestModel

QUEUE_ORDER = (TextRequest.priority_class, TextRequest.priority.desc(), TextRequest.created_at, TextRequest.id)


@dataclass
class Offer:
    """What a popping worker offers: its text declarations, and what the Horde knows of it."""

    worker: TextWorkerView
    trusted: bool
    slow: bool


_MODEL_ROWS = table_of(TextRequestModel)
#: The model rows a worker reads: its models' and ANY_MODEL's (bind parameter `queue_models`, see offer_params).
OF_THE_WORKERS_MODELS = _MODEL_ROWS.c.model.in_(bindparam("queue_models", expanding=True))
#: Whether a request takes any model, or one of the worker's.
_SERVES_MODEL = exists(select(literal(1)).where(_MODEL_ROWS.c.request_id == TextRequest.id, OF_THE_WORKERS_MODELS))
#: The worker's id between bars ("%|id|%"), as a request's only_workers and blocked_workers list workers.
_WORKER_PATTERN = bindparam("worker_pattern", type_=String)
#: (skipped reason, SQL condition a request must meet) pairs, built once: the offer comes in the bind parameters
#: of `offer_params`, so a pop neither builds nor hashes these statements again.
CONDITIONS: list[tuple[str, ColumnElement[bool]]] = [
    ("models", _SERVES_MODEL),
    ("max_length", TextRequest.max_length <= bindparam("text_max_length")),
    ("max_context_length", TextRequest.max_context_length <= bindparam("text_max_context_length")),
    (
        "matching_softprompt",
        or_(TextRequest.softprompt.is_(None), TextRequest.softprompt.in_(bindparam("softprompts", expanding=True))),
    ),
    (
        "worker_id",
        and_(
            or_(TextRequest.only_workers.is_(None), like_planned_once(TextRequest.only_workers, _WORKER_PATTERN)),
            or_(
                TextRequest.blocked_workers.is_(None),
                not_(like_planned_once(TextRequest.blocked_workers, _WORKER_PATTERN)),
            ),
        ),
    ),
    ("untrusted", or_(TextRequest.trusted_only.is_(False), bindparam("trusted", type_=Boolean))),
    ("performance", or_(TextRequest.slow_workers.is_(True), bindparam("fast", type_=Boolean))),
    ("nsfw", or_(TextRequest.nsfw.is_(False), bindparam("nsfw", type_=Boolean))),
    ("kudos", or_(TextRequest.upfront_paid.is_(True), bindparam("no_upfront_kudos", type_=Boolean))),
]
_BESIDE_MODELS = [(name, condition) for name, condition in CONDITIONS if name != "models"]
#: What a request of one of the worker's models (a model row it walks) must also meet for the worker to take it.
TAKEABLE = and_(TextRequest.state == WAITING, TextRequest.waiting > 0, *[condition for _, condition in _BESIDE_MODELS])
_FIRST_FAILURE = case(*[(not_(condition), name) for name, condition in _BESIDE_MODELS], else_="")
#: The requests of the worker's models, from their model rows, each with its first failing condition ("" for none)
#: while it waits: a scalar subquery by the request's key, never a join, which a planner without statistics turns
#: into a read of every waiting request, those of other models included.
_MINE = select(_MODEL_ROWS.c.request_id).where(OF_THE_WORKERS_MODELS).distinct().subquery("mine")
_REASONS = (
    select(of_its_request(table_of(TextRequest), _MINE, _FIRST_FAILURE, TextRequest.state == WAITING).label("reason"))
    .select_from(_MINE)
    .subquery("reasons")
)
_SKIPPED_OF_MINE = (
    select(_REASONS.c.reason, func.count()).where(_REASONS.c.reason.is_not(None)).group_by(_REASONS.c.reason)
)


def offer_params(offer: Offer) -> dict:
    """The bind parameters of CONDITIONS for this offer."""
    worker = offer.worker
    return {
        "queue_models": [*(worker.text_models or []), ANY_MODEL],
        "text_max_length": worker.text_max_length,
        "text_max_context_length": worker.text_max_context_length,
        "softprompts": list(worker.softprompts or []),
        "worker_pattern": f"%|{worker.id}|%",
        "trusted": bool(offer.trusted),
        "fast": not offer.slow,
        "nsfw": bool(worker.nsfw),
        "no_upfront_kudos": not worker.require_upfront_kudos,
    }


def offer_key(offer: Offer) -> tuple:
    """The offer as a hashable key: its bind parameters, lists as tuples."""
    return tuple(
        (name, tuple(value) if isinstance(value, list) else value)
        for name, value in sorted(offer_params(offer).items())
    )


def skipped_counts(session: Session, offer: Offer, waiting_total: int) -> dict[str, int]:
    """Why the waiting requests were not given to this worker, by first failing reason. Only the requests of its
    models are read; the others are `waiting_total` (every waiting request, counted at most once a second by the
    caller) less those: an empty pop's cost does not grow with a backlog for models it does not serve."""
    rows = precompiled.execute(session.connection(), _SKIPPED_OF_MINE, offer_params(offer)).all()
    counts = {reason: count for reason, count in rows if reason and count}
    of_other_models = waiting_total - sum(count for _, count in rows)
    return {"models": of_other_models, **counts} if of_other_models > 0 else counts
