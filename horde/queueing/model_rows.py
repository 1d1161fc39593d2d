"""A request's model rows, one per model it accepts, with the request's place in the queue copied on them.

A request's place (priority class, priority, arrival) never changes while it is queued, so the copy made at
admission stays true. The index by model and place lets a pop walk the requests of its worker's models in the
queue's order and stop at the first it may take: the requests of other models (a backlog for models whose
workers went offline) are never read. Rows of ended requests are dropped (chat: horde/chat/model_rows.py; text:
a trigger on the request's state), so the walk never grows with the Horde's history.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from typing import Any

from sqlalchemy import (
    ColumnElement,
    DateTime,
    Delete,
    FromClause,
    Index,
    Integer,
    ScalarSelect,
    Table,
    bindparam,
    case,
    delete,
    select,
    text,
    true,
    tuple_,
)
from sqlalchemy.orm import Mapped, declared_attr, mapped_column

#: Columns a model row copies from its request at admission (the queue's order, as ix_*_requests_queue has it).
PLACE_COLUMNS = ("priority_class", "priority", "created_at")


class QueuePlace:
    """Mixin of chat_request_models and text_request_models: the request's place, and the index that walks it."""

    __tablename__: str

    priority_class: Mapped[int] = mapped_column(Integer, server_default=text("1"))
    priority: Mapped[int] = mapped_column(Integer, server_default=text("0"))
    #: Nullable only for rows written before the column (the upgrade fills them from their requests).
    created_at: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)

    @declared_attr.directive
    def __table_args__(cls) -> tuple:
        return (
            Index(
                f"ix_{cls.__tablename__}_queue",
                "model",
                "priority_class",
                text("priority DESC"),
                "created_at",
                "request_id",
            ),
        )


def queue_order(model_rows: Table) -> tuple[Any, ...]:
    """The queue's order on a model rows table: its index's, so a walk for one model reads it in order."""
    columns = model_rows.c
    return (columns.priority_class, columns.priority.desc(), columns.created_at, columns.request_id)


def of_its_request(requests: Table, model_rows: FromClause, value: Any, when: ColumnElement[bool]) -> ScalarSelect[Any]:
    """`value` of a model row's request (`model_rows`: the table, an alias or a subquery with `request_id`) when
    `when` holds, else NULL: a scalar subquery (no planner turns it into a join) whose only condition is the
    request's key, so that its plan is a probe of the primary key. With `when` among the conditions, a planner
    without statistics found a composite index that leads with the state as good, and walked every waiting
    request's entry for the key at its end."""
    found = select(case((when, value))).where(requests.c.id == model_rows.c.request_id)
    return found.correlate(model_rows).scalar_subquery()


def unheld_rows_deletion(model_rows: Table, which: Callable[[FromClause], ColumnElement[bool]]) -> Delete:
    """The DELETE of the model rows `which(rows)` selects (`rows`: an alias of `model_rows`) that no pop holds.
    A pop locks the model row it walks to, then takes that row's request; a transaction that ends the request
    holds the request's row and must not wait for the model row (each would wait for the other: a deadlock).
    The rows a pop holds are left to the sweeper (ended_rows_deletion); the pop finds the request ended."""
    rows = model_rows.alias("unheld")
    unheld = select(rows.c.request_id, rows.c.model).where(which(rows)).with_for_update(of=rows, skip_locked=True)
    return delete(model_rows).where(tuple_(model_rows.c.request_id, model_rows.c.model).in_(unheld))


#: Ended requests whose model rows one sweep drops: bounded work per sweep; a backlog (a database from before the
#: sweep) clears over successive sweeps.
FORGET_PER_SWEEP = 5000


def ended_rows_deletion(requests: Table, model_rows: Table, final_states: Sequence[str]) -> Delete:
    """The DELETE of the model rows of up to `batch` (a bind parameter) ended requests, found from the model rows
    (few: the live requests' and the latest ended ones), each request's state read by its key: a join let SQLite
    walk every ended request of the history instead, and an EXISTS, which PostgreSQL turns into a join, let it do
    the same without statistics."""
    listed = model_rows.alias("listed")
    state = of_its_request(requests, listed, requests.c.state, true())
    ended = select(listed.c.request_id).where(state.in_(list(final_states))).limit(bindparam("batch"))
    return delete(model_rows).where(model_rows.c.request_id.in_(ended.scalar_subquery()))
