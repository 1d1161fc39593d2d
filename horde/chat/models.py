"""Chat request and job tables.

A request is what a client asked for; a job is one attempt of one worker at it.
"""

from __future__ import annotations

import datetime as dt
import uuid
from enum import StrEnum

from sqlalchemy import (
    JSON,
    Boolean,
    ColumnElement,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    and_,
    false,
    literal_column,
    text,
)
from sqlalchemy.orm import Mapped, mapped_column

from horde.queueing.model_rows import QueuePlace
from horde.storage.database import Base
from horde.timeutil import utcnow


class RequestState(StrEnum):
    """Where a chat request stands; the last three are final."""

    WAITING = "waiting"
    PROCESSING = "processing"
    DONE = "done"
    FAULTED = "faulted"
    CANCELLED = "cancelled"


class JobState(StrEnum):
    """Where one worker's attempt at a request stands."""

    PROCESSING = "processing"
    SUBMITTED = "submitted"
    ABORTED = "aborted"
    FAULTED = "faulted"
    REFUSED = "refused"
    CANCELLED = "cancelled"


# The states by their short names, as the modules of the chat service use them.
WAITING, PROCESSING, DONE = RequestState.WAITING, RequestState.PROCESSING, RequestState.DONE
FAULTED, CANCELLED = RequestState.FAULTED, RequestState.CANCELLED
FINAL_STATES = (DONE, FAULTED, CANCELLED)
#: The states of a request in flight, as the partial indexes of a user's open requests name them (chat's, text's),
#: and as the statements that count such requests must write them, for the planners to take those indexes.
IN_FLIGHT_STATES_SQL = "state IN ('waiting', 'processing')"
#: What counts against a user's concurrency: the user's requests in flight but batch lines, which their batch bounds
#: instead (HORDE_BATCH_MAX_IN_FLIGHT), so that a running batch never takes its user's places for interactive work.
COUNTED_IN_FLIGHT_SQL = IN_FLIGHT_STATES_SQL + " AND NOT batch_line"


def counted_in_flight(state: ColumnElement[str]) -> ColumnElement[bool]:
    """COUNTED_IN_FLIGHT_SQL written as the partial indexes of counted requests write it (`batch_line` unqualified:
    the statements that count read one table)."""
    return and_(state.in_([literal_column(f"'{name}'") for name in (WAITING, PROCESSING)]), text("NOT batch_line"))


JOB_PROCESSING, JOB_SUBMITTED, JOB_ABORTED = JobState.PROCESSING, JobState.SUBMITTED, JobState.ABORTED
JOB_FAULTED, JOB_REFUSED, JOB_CANCELLED = JobState.FAULTED, JobState.REFUSED, JobState.CANCELLED

#: Whether a request's progress posts are kept in order (horde/background, a background-streamed response replays
#: them), and whether some text was kept: a request whose kept text a client may have read is never started over.
PROGRESS_NOT_KEPT, PROGRESS_KEPT, PROGRESS_KEPT_SHOWN = 0, 1, 2

#: Priority classes: users with kudos are served before everyone else (docs/reference/chat_requests.md).
PRIORITY_CLASS_KUDOS, PRIORITY_CLASS_OTHERS = 0, 1


def new_id() -> str:
    return str(uuid.uuid4())


class ChatRequest(Base):
    __tablename__ = "chat_requests"
    __table_args__ = (
        # Matches QUEUE_ORDER, so a claim walks the index and stops at the first eligible request.
        Index("ix_chat_requests_queue", "state", "priority_class", text("priority DESC"), "created_at", "id"),
        Index("ix_chat_requests_user_created", "user_id", "created_at"),
        # The done requests by their end, for the stats (horde/stats). Partial: PostgreSQL's planner took an index of
        # every request by state for the claim's `state = 'waiting'`, walking the dead entries of ended requests.
        # The state leads all the same: SQLite without statistics prefers an index that takes the state and the
        # end to the queue's index for the state alone (by which it would walk every done request).
        Index(
            "ix_chat_requests_done_finished",
            "state",
            "finished_at",
            postgresql_where=text("state = 'done'"),
            sqlite_where=text("state = 'done'"),
        ),
        # A conversation's latest requests, for the worker that served its last turn (horde/chat/affinity.py).
        Index("ix_chat_requests_conversation", "conversation_key", "created_at"),
        # The waiting requests reserved for a worker, in the queue's order, which its claim looks at first. The state
        # and the worker both lead, so that a planner without statistics (SQLite) finds it more selective than the
        # queue's index, and the order follows, so that none walks the queue's index to spare a sort. Partial: the
        # reservations of requests that left the queue stay in their rows, and a probe must not walk them.
        Index(
            "ix_chat_requests_reserved",
            "state",
            "reserved_worker_id",
            "priority_class",
            text("priority DESC"),
            "created_at",
            "id",
            postgresql_where=text("state = 'waiting' AND reserved_worker_id IS NOT NULL"),
            sqlite_where=text("state = 'waiting' AND reserved_worker_id IS NOT NULL"),
        ),
        # The open requests paid with a shared key, whose estimates the key holds (horde/accounts/shared_keys.py).
        # Partial: a request without one (nearly all) adds no entry.
        Index(
            "ix_chat_requests_shared_key",
            "shared_key_id",
            "state",
            postgresql_where=text("shared_key_id IS NOT NULL"),
            sqlite_where=text("shared_key_id IS NOT NULL"),
        ),
        # A user's requests waiting or running, batch lines apart, which admission counts against its concurrency
        # (horde/chat/request_rows.py). Partial: an ended request leaves it.
        Index(
            "ix_chat_requests_counted_in_flight",
            "user_id",
            postgresql_where=text(COUNTED_IN_FLIGHT_SQL),
            sqlite_where=text(COUNTED_IN_FLIGHT_SQL),
        ),
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"))
    #: The shared key the request is paid with (its user is the key's owner), if any.
    shared_key_id: Mapped[str | None] = mapped_column(String(36), nullable=True)
    state: Mapped[str] = mapped_column(String(16), default=WAITING)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
    finished_at: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)
    priority_class: Mapped[int] = mapped_column(Integer, default=PRIORITY_CLASS_OTHERS)
    priority: Mapped[int] = mapped_column(Integer, default=0)

    # What a worker must offer (see horde/chat/eligibility.py).
    models: Mapped[list] = mapped_column(JSON)
    max_tokens: Mapped[int] = mapped_column(Integer)
    context_tokens: Mapped[int] = mapped_column(Integer)
    prompt_tokens: Mapped[int] = mapped_column(Integer, default=0)
    required_features: Mapped[int] = mapped_column(Integer, default=0)
    required_guarantees: Mapped[int] = mapped_column(Integer, default=0)
    tools_temperature: Mapped[float | None] = mapped_column(Float, nullable=True)
    only_workers: Mapped[str | None] = mapped_column(Text, nullable=True)  # "|id|id|" for LIKE
    trusted_only: Mapped[bool] = mapped_column(Boolean, default=False)

    payload: Mapped[dict] = mapped_column(JSON)
    n_images: Mapped[int] = mapped_column(Integer, default=0)
    kudos_estimate: Mapped[int] = mapped_column(Integer, default=0)
    kudos_charged: Mapped[int] = mapped_column(Integer, default=0)
    #: The requester's usage multiplier when it was admitted: it pays the price times this, its worker's owner
    #: earns the price (horde/accounts/moves.py multiplied).
    usage_multiplier: Mapped[float] = mapped_column(Float, default=1.0, server_default=text("1.0"))
    context_adjustments: Mapped[list | None] = mapped_column(JSON, nullable=True)
    client_agent: Mapped[str] = mapped_column(String(300), default="unknown:0:unknown")
    #: The caller's address; the anonymous user's rate budget is counted by it (rate_counts).
    client_address: Mapped[str | None] = mapped_column(String(64), nullable=True)
    #: Hash of the client's body, so that a retry of the same body can find this request.
    body_hash: Mapped[str | None] = mapped_column(String(64), nullable=True, index=True)
    #: Open client connections waiting on this request; a drop cancels only when none is left.
    holders: Mapped[int] = mapped_column(Integer, default=0)
    #: An answer reached a client; an SDK retry may attach only to requests whose answer did not.
    delivered: Mapped[bool] = mapped_column(Boolean, default=False)

    attempts: Mapped[int] = mapped_column(Integer, default=0)
    current_job_id: Mapped[str | None] = mapped_column(String(36), nullable=True)
    worker_id: Mapped[str | None] = mapped_column(String(36), nullable=True)
    worker_name: Mapped[str | None] = mapped_column(String(100), nullable=True)
    served_model: Mapped[str | None] = mapped_column(String(200), nullable=True)
    reply: Mapped[dict | None] = mapped_column(JSON, nullable=True)
    progress_content: Mapped[str | None] = mapped_column(Text, nullable=True)
    progress_reasoning: Mapped[str | None] = mapped_column(Text, nullable=True)
    progress_seq: Mapped[int] = mapped_column(Integer, default=0)
    #: PROGRESS_NOT_KEPT, PROGRESS_KEPT or PROGRESS_KEPT_SHOWN.
    progress_log: Mapped[int] = mapped_column(Integer, default=PROGRESS_NOT_KEPT, server_default=text("0"))
    fault_rc: Mapped[str | None] = mapped_column(String(50), nullable=True)
    fault_message: Mapped[str | None] = mapped_column(Text, nullable=True)
    #: The conversation the request continues, hashed with its user's id (horde/chat/conversation.py).
    conversation_key: Mapped[str | None] = mapped_column(String(32), nullable=True)
    #: The worker that served the conversation's last turn, which alone may claim the request until
    #: `reserved_until` (horde/chat/affinity.py); None when no worker was reserved.
    reserved_worker_id: Mapped[str | None] = mapped_column(String(36), nullable=True)
    reserved_until: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)
    #: "default", or "flex": behind the interactive requests of its priority class, charged
    #: HORDE_BATCH_PRICE_FACTOR of the price (horde/chat/tiers.py). A database default for rows written before it.
    service_tier: Mapped[str] = mapped_column(String(8), default="default", server_default=text("'default'"))
    #: A line of a batch: bounded by its batch's lines in flight, not counted against its user's concurrency.
    batch_line: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())

    @property
    def only_worker_ids(self) -> list[str]:
        return [item for item in (self.only_workers or "").split("|") if item]


class ChatRequestModel(QueuePlace, Base):
    """One row per model a request accepts, with the request's place in the queue (horde/queueing/model_rows.py)."""

    __tablename__ = "chat_request_models"

    request_id: Mapped[str] = mapped_column(ForeignKey("chat_requests.id", ondelete="CASCADE"), primary_key=True)
    model: Mapped[str] = mapped_column(String(200), primary_key=True)


class ChatJob(Base):
    __tablename__ = "chat_jobs"
    #: A pop counts its worker's running jobs: by worker and state, so the count never walks the worker's history.
    #: The wait estimate reads the latest submitted jobs: by state and end, so it reads fifty, not every one.
    __table_args__ = (
        Index("ix_chat_jobs_state_deadline", "state", "deadline_at"),
        Index("ix_chat_jobs_worker_state", "worker_id", "state"),
        Index("ix_chat_jobs_state_ended", "state", "ended_at"),
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    request_id: Mapped[str] = mapped_column(ForeignKey("chat_requests.id", ondelete="CASCADE"), index=True)
    worker_id: Mapped[str] = mapped_column(ForeignKey("workers.id"))
    model: Mapped[str] = mapped_column(String(200))
    state: Mapped[str] = mapped_column(String(16), default=JOB_PROCESSING)
    started_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
    deadline_at: Mapped[dt.datetime] = mapped_column(DateTime)
    ended_at: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)
    reason: Mapped[str | None] = mapped_column(Text, nullable=True)
