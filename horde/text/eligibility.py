"""Which waiting text requests a worker may take, in SQL, and why the others were skipped.

The order of `REASONS` is the order the skipped counts are attributed in: a request
counts once, under the first condition it fails.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import ColumnElement, and_, case, exists, func, literal, not_, or_, select
from sqlalchemy.orm import Session

from horde.text.models import WAITING, TextRequest, TextRequestModel
from horde.workers.models import Worker

QUEUE_ORDER = (TextRequest.priority_class, TextRequest.priority.desc(), TextRequest.created_at, TextRequest.id)


@dataclass
class Offer:
    """What a popping worker offers, beyond its row."""

    worker: Worker
    trusted: bool
    slow: bool


def _serves_model(worker: Worker):
    any_model = ~exists(select(literal(1)).where(TextRequestModel.request_id == TextRequest.id))
    listed = exists(
        select(literal(1)).where(
            and_(TextRequestModel.request_id == TextRequest.id, TextRequestModel.model.in_(worker.text_models or []))
        )
    )
    return or_(any_model, listed)


def conditions(offer: Offer) -> list[tuple[str, ColumnElement[bool]]]:
    """(skipped reason, SQL condition a request must meet) pairs."""
    worker = offer.worker
    softprompts = list(worker.softprompts or [])
    return [
        ("models", _serves_model(worker)),
        ("max_length", TextRequest.max_length <= worker.text_max_length),
        ("max_context_length", TextRequest.max_context_length <= worker.text_max_context_length),
        ("matching_softprompt", or_(TextRequest.softprompt.is_(None), TextRequest.softprompt.in_(softprompts))),
        (
            "worker_id",
            and_(
                or_(TextRequest.only_workers.is_(None), TextRequest.only_workers.like(f"%|{worker.id}|%")),
                or_(TextRequest.blocked_workers.is_(None), not_(TextRequest.blocked_workers.like(f"%|{worker.id}|%"))),
            ),
        ),
        ("untrusted", or_(TextRequest.trusted_only.is_(False), literal(offer.trusted))),
        ("performance", or_(TextRequest.slow_workers.is_(True), literal(not offer.slow))),
        ("nsfw", or_(TextRequest.nsfw.is_(False), literal(bool(worker.nsfw)))),
        ("kudos", or_(TextRequest.upfront_paid.is_(True), literal(not worker.require_upfront_kudos))),
    ]


def queue_filter(offer: Offer) -> ColumnElement[bool]:
    return and_(
        TextRequest.state == WAITING, TextRequest.waiting > 0, *[condition for _, condition in conditions(offer)]
    )


def skipped_counts(session: Session, offer: Offer) -> dict[str, int]:
    """Why the waiting requests were not given to this worker, by first failing reason."""
    first_failure = case(*[(not_(condition), name) for name, condition in conditions(offer)], else_="")
    rows = session.execute(
        select(first_failure, func.count()).where(TextRequest.state == WAITING).group_by(first_failure)
    ).all()
    return {reason: count for reason, count in rows if reason and count}
