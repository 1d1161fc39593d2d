"""A request's model rows (chat_request_models) serve the queue alone: who may take a waiting request.

A pop's first look (claim.ANY_WAITING_FOR) walks the model rows of the worker's models and asks each
request whether it waits. Rows of ended requests would make that walk grow with the Horde's history (every
request ever made for a model), so they are dropped: a request that has ended (done, faulted, cancelled)
never waits again, and nothing else reads its model rows (its own `models` column keeps them). A submit that
finishes its request drops them in the same transaction (on PostgreSQL, the same statement): under load the
ended requests of one sweep interval would otherwise lie under every look (on SQLite, 150 of them made a
look 64 µs where it takes 8). The sweeper drops the rest (faulted, cancelled, and any from before).
"""

from __future__ import annotations

from sqlalchemy import CTE, Select, bindparam, delete, select, true
from sqlalchemy.orm import Session

from horde.chat.models import FINAL_STATES
from horde.chat.request_rows import REQUEST_MODELS, REQUESTS
from horde.queueing.model_rows import of_its_request
from horde.storage import precompiled

#: Ended requests whose model rows one sweep drops: bounded work per sweep; a backlog (a database from
#: before this sweep) clears over successive sweeps.
FORGET_PER_SWEEP = 5000

#: The model rows of ended requests, found from the model rows (few: the live requests' and the latest ended
#: ones), each request's state read by its key: a join let SQLite walk every ended request of the history instead,
#: and an EXISTS, which PostgreSQL turns into a join, let it do the same without statistics.
_LISTED = REQUEST_MODELS.alias("listed")
_STATE_OF_LISTED = of_its_request(REQUESTS, _LISTED, REQUESTS.c.state, true())
_FORGET_ENDED = delete(REQUEST_MODELS).where(
    REQUEST_MODELS.c.request_id.in_(
        select(_LISTED.c.request_id)
        .where(_STATE_OF_LISTED.in_(FINAL_STATES))
        .limit(bindparam("batch"))
        .scalar_subquery()
    )
)


_FORGET_FINISHED = delete(REQUEST_MODELS).where(REQUEST_MODELS.c.request_id == bindparam("finished_request"))


def forget_finished(session: Session, request_id: str) -> None:
    """Drop the model rows of `request_id`, which this transaction has just finished."""
    precompiled.execute(session.connection(), _FORGET_FINISHED, {"finished_request": request_id})


def forget_finished_cte(finished_ids: Select) -> CTE:
    """PostgreSQL: a data-modifying WITH clause that drops the model rows of the requests `finished_ids` selects,
    for a statement that finishes its request."""
    return (
        delete(REQUEST_MODELS)
        .where(REQUEST_MODELS.c.request_id.in_(finished_ids))
        .returning(REQUEST_MODELS.c.request_id)
        .cte("forgotten_models")
    )


def forget_ended(session: Session, batch: int = FORGET_PER_SWEEP) -> int:
    """Drop the model rows of up to `batch` rows' worth of ended requests; how many rows went."""
    return precompiled.execute(session.connection(), _FORGET_ENDED, {"batch": batch}).rowcount
