"""A request's model rows (chat_request_models) serve the queue alone: who may take a waiting request.

A pop's first look (claim.ANY_WAITING_FOR) walks the model rows of the worker's models and asks each
request whether it waits. Rows of ended requests would make that walk grow with the Horde's history (every
request ever made for a model), so the sweeper drops them: a request that has ended (done, faulted,
cancelled) never waits again, and nothing else reads its model rows (its own `models` column keeps them).
"""

from __future__ import annotations

from sqlalchemy import bindparam, delete, select
from sqlalchemy.orm import Session

from horde.chat.request_rows import ENDED, REQUEST_MODELS, REQUESTS

#: Ended requests whose model rows one sweep drops: bounded work per sweep; a backlog (a database from
#: before this sweep) clears over successive sweeps.
FORGET_PER_SWEEP = 5000

_FORGET_ENDED = delete(REQUEST_MODELS).where(
    REQUEST_MODELS.c.request_id.in_(
        select(REQUEST_MODELS.c.request_id)
        .join(REQUESTS, REQUESTS.c.id == REQUEST_MODELS.c.request_id)
        .where(ENDED)
        .limit(bindparam("batch"))
        .scalar_subquery()
    )
)


def forget_ended(session: Session, batch: int = FORGET_PER_SWEEP) -> int:
    """Drop the model rows of up to `batch` rows' worth of ended requests; how many rows went."""
    return session.connection().execute(_FORGET_ENDED, {"batch": batch}).rowcount
