"""A request's model rows (chat_request_models) serve the queue alone: who may take a waiting request.

A pop's first look (claim.ANY_WAITING_FOR) walks the model rows of the worker's models and asks each
request whether it waits. Rows of ended requests would make that walk grow with the Horde's history (every
request ever made for a model), so they are dropped: a request that has ended (done, faulted, cancelled)
never waits again, and nothing else reads its model rows (its own `models` column keeps them). A submit that
finishes its request drops them in the same transaction (on PostgreSQL, the same statement): under load the
ended requests of one sweep interval would otherwise lie under every look (on SQLite, 150 of them made a
look 64 µs where it takes 8). It skips a row that a pop holds at that moment (waiting for it would deadlock
with that pop). The sweeper drops the rest (those, faulted, cancelled, and any from before).
"""

from __future__ import annotations

from sqlalchemy import CTE, Select, bindparam
from sqlalchemy.orm import Session

from horde.chat.models import FINAL_STATES
from horde.chat.request_rows import REQUEST_MODELS, REQUESTS
from horde.queueing.model_rows import FORGET_PER_SWEEP, ended_rows_deletion, unheld_rows_deletion
from horde.storage import precompiled

_FORGET_ENDED = ended_rows_deletion(REQUESTS, REQUEST_MODELS, FINAL_STATES)


_FORGET_FINISHED = unheld_rows_deletion(REQUEST_MODELS, lambda rows: rows.c.request_id == bindparam("finished_request"))


def forget_finished(session: Session, request_id: str) -> None:
    """Drop the model rows of `request_id`, which this transaction has just finished, but those a pop holds."""
    precompiled.execute(session.connection(), _FORGET_FINISHED, {"finished_request": request_id})


def forget_finished_cte(finished_ids: Select) -> CTE:
    """PostgreSQL: a data-modifying WITH clause that drops the model rows of the requests `finished_ids` selects,
    but those a pop holds, for a statement that finishes its request."""
    deletion = unheld_rows_deletion(REQUEST_MODELS, lambda rows: rows.c.request_id.in_(finished_ids))
    return deletion.returning(REQUEST_MODELS.c.request_id).cte("forgotten_models")


def forget_ended(session: Session, batch: int = FORGET_PER_SWEEP) -> int:
    """Drop the model rows of up to `batch` rows' worth of ended requests; how many rows went."""
    return precompiled.execute(session.connection(), _FORGET_ENDED, {"batch": batch}).rowcount
