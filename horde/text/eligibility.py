"""Which waiting text requests a worker may take, in SQL, and why the others were skipped.

The order of `REASONS` is the order the skipped counts are attributed in: a request
counts once, under the first condition it fails.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Boolean, ColumnElement, String, and_, bindparam, case, exists, func, literal, not_, or_, select
from sqlalchemy.orm import Session

from horde.storage.database import like_planned_once
from horde.text.checkin import TextWorkerView
from horde.text.models import WAITING, TextRequest, TextRequestModel

QUEUE_ORDER = (TextRequest.priority_class, TextRequest.priority.desc(), TextRequest.created_at, TextRequest.id)


@dataclass
class Offer:
    """What a popping worker offers: its text declarations, and what the Horde knows of it."""

    worker: TextWorkerView
    trusted: bool
    slow: bool


#: Whether a request takes any model, or one of the worker's (bind parameter `text_models`).
_SERVES_MODEL = or_(
    ~exists(select(literal(1)).where(TextRequestModel.request_id == TextRequest.id)),
    exists(
        select(literal(1)).where(
            TextRequestModel.request_id == TextRequest.id,
            TextRequestModel.model.in_(bindparam("text_models", expanding=True)),
        )
    ),
)
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
QUEUE_FILTER = and_(TextRequest.state == WAITING, TextRequest.waiting > 0, *[condition for _, condition in CONDITIONS])
_FIRST_FAILURE = case(*[(not_(condition), name) for name, condition in CONDITIONS], else_="")
_SKIPPED = select(_FIRST_FAILURE, func.count()).where(TextRequest.state == WAITING).group_by(_FIRST_FAILURE)


def offer_params(offer: Offer) -> dict:
    """The bind parameters of CONDITIONS for this offer."""
    worker = offer.worker
    return {
        "text_models": list(worker.text_models or []),
        "text_max_length": worker.text_max_length,
        "text_max_context_length": worker.text_max_context_length,
        "softprompts": list(worker.softprompts or []),
        "worker_pattern": f"%|{worker.id}|%",
        "trusted": bool(offer.trusted),
        "fast": not offer.slow,
        "nsfw": bool(worker.nsfw),
        "no_upfront_kudos": not worker.require_upfront_kudos,
    }


def skipped_counts(session: Session, offer: Offer) -> dict[str, int]:
    """Why the waiting requests were not given to this worker, by first failing reason."""
    rows = session.execute(_SKIPPED, offer_params(offer)).all()
    return {reason: count for reason, count in rows if reason and count}
