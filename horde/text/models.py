"""Text request and job tables.

A text request is what a client asked for: `n` generations of one prompt. Each
generation is handed out as one job, possibly to different workers; the request
row counts its generations by stage (waiting, processing, finished), and every
change of those counts is one compare-and-set UPDATE (horde/text/lifecycle.py).
"""

from __future__ import annotations

import datetime as dt
import uuid

from sqlalchemy import (
    DDL,
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    event,
    false,
    text,
)
from sqlalchemy.orm import Mapped, mapped_column

from horde.chat.models import COUNTED_IN_FLIGHT_SQL
from horde.queueing.model_rows import QueuePlace
from horde.storage.database import Base
from horde.timeutil import utcnow

#: Request states: `waiting` while generations remain to hand out, `processing` while the last ones run.
WAITING, PROCESSING, DONE, FAULTED, CANCELLED = "waiting", "processing", "done", "faulted", "cancelled"
FINAL_STATES = (DONE, FAULTED, CANCELLED)
#: The model row of a request that takes any model: a worker's walk reads it beside its own models' rows. No model
#: is named so (a request's and a worker's model names are not empty).
ANY_MODEL = ""

JOB_PROCESSING, JOB_SUBMITTED, JOB_ABORTED, JOB_FAULTED, JOB_CANCELLED = (
    "processing",
    "submitted",
    "aborted",
    "faulted",
    "cancelled",
)


def new_id() -> str:
    return str(uuid.uuid4())


class TextRequest(Base):
    __tablename__ = "text_requests"
    __table_args__ = (
        Index("ix_text_requests_queue", "state", "priority_class", text("priority DESC"), "created_at", "id"),
        Index("ix_text_requests_user_created", "user_id", "created_at"),
        # The open requests paid with a shared key, as chat's (horde/chat/models.py).
        Index(
            "ix_text_requests_shared_key",
            "shared_key_id",
            "state",
            postgresql_where=text("shared_key_id IS NOT NULL"),
            sqlite_where=text("shared_key_id IS NOT NULL"),
        ),
        # A user's requests waiting or running, batch lines apart, whose generations admission counts against its
        # concurrency.
        Index(
            "ix_text_requests_counted_in_flight",
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
    priority_class: Mapped[int] = mapped_column(Integer, default=1)
    priority: Mapped[int] = mapped_column(Integer, default=0)

    # What a worker must offer.
    models: Mapped[list] = mapped_column(JSON)
    max_length: Mapped[int] = mapped_column(Integer)
    max_context_length: Mapped[int] = mapped_column(Integer)
    prompt_tokens: Mapped[int] = mapped_column(Integer, default=0)
    softprompt: Mapped[str | None] = mapped_column(String(200), nullable=True)
    only_workers: Mapped[str | None] = mapped_column(Text, nullable=True)  # "|id|id|" for LIKE
    blocked_workers: Mapped[str | None] = mapped_column(Text, nullable=True)  # "|id|id|" for NOT LIKE
    trusted_only: Mapped[bool] = mapped_column(Boolean, default=False)
    slow_workers: Mapped[bool] = mapped_column(Boolean, default=True)
    disable_batching: Mapped[bool] = mapped_column(Boolean, default=False)
    nsfw: Mapped[bool] = mapped_column(Boolean, default=False)
    #: The requester held the estimate when it was queued (for workers that ask for upfront kudos).
    upfront_paid: Mapped[bool] = mapped_column(Boolean, default=False)

    prompt: Mapped[str] = mapped_column(Text)
    params: Mapped[dict] = mapped_column(JSON)
    webhook: Mapped[str | None] = mapped_column(Text, nullable=True)
    client_agent: Mapped[str] = mapped_column(String(300), default="unknown:0:unknown")
    #: The caller's address; the anonymous user's rate budget is counted by it (rate_counts).
    client_address: Mapped[str | None] = mapped_column(String(64), nullable=True)

    n: Mapped[int] = mapped_column(Integer, default=1)
    waiting: Mapped[int] = mapped_column(Integer, default=1)
    processing: Mapped[int] = mapped_column(Integer, default=0)
    finished: Mapped[int] = mapped_column(Integer, default=0)
    restarted: Mapped[int] = mapped_column(Integer, default=0)
    cancelled: Mapped[bool] = mapped_column(Boolean, default=False)
    kudos_estimate: Mapped[int] = mapped_column(Integer, default=0)
    kudos_charged: Mapped[int] = mapped_column(Integer, default=0)
    #: The requester's usage multiplier when it was admitted, as chat's (horde/chat/models.py).
    usage_multiplier: Mapped[float] = mapped_column(Float, default=1.0, server_default=text("1.0"))
    fault_rc: Mapped[str | None] = mapped_column(String(50), nullable=True)
    fault_message: Mapped[str | None] = mapped_column(Text, nullable=True)

    # The OpenAI front's bookkeeping, as on chat requests (horde/oai/idempotency.py).
    body_hash: Mapped[str | None] = mapped_column(String(64), nullable=True, index=True)
    holders: Mapped[int] = mapped_column(Integer, default=0)
    delivered: Mapped[bool] = mapped_column(Boolean, default=False)
    #: "default", or "flex" (a batch line of /v1/completions): as a chat request's (horde/chat/tiers.py).
    service_tier: Mapped[str] = mapped_column(String(8), default="default", server_default=text("'default'"))
    #: A line of a batch: bounded by its batch's lines in flight, not counted against its user's concurrency.
    batch_line: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())


class TextRequestModel(QueuePlace, Base):
    """One row per model a request accepts (ANY_MODEL's one for a request that takes any), with the request's place
    in the queue (horde/queueing/model_rows.py), while the request lives."""

    __tablename__ = "text_request_models"

    request_id: Mapped[str] = mapped_column(ForeignKey("text_requests.id", ondelete="CASCADE"), primary_key=True)
    model: Mapped[str] = mapped_column(String(200), primary_key=True)


class TextJob(Base):
    """One generation handed to one worker."""

    __tablename__ = "text_jobs"
    #: A pop counts its worker's running jobs, and its speed is the median of its latest submitted ones: by worker,
    #: state and end, so neither walks the worker's history.
    __table_args__ = (
        Index("ix_text_jobs_state_deadline", "state", "deadline_at"),
        Index("ix_text_jobs_worker_state_ended", "worker_id", "state", "ended_at"),
        # The latest submitted jobs (the wait estimate) and the generations served by their end (the stats): partial
        # and led by the state, as chat's done requests by their end (horde/chat/models.py).
        Index(
            "ix_text_jobs_submitted_ended",
            "state",
            "ended_at",
            postgresql_where=text("state = 'submitted'"),
            sqlite_where=text("state = 'submitted'"),
        ),
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    request_id: Mapped[str] = mapped_column(ForeignKey("text_requests.id", ondelete="CASCADE"), index=True)
    worker_id: Mapped[str] = mapped_column(ForeignKey("workers.id"))
    worker_name: Mapped[str] = mapped_column(String(100))
    model: Mapped[str] = mapped_column(String(200))
    state: Mapped[str] = mapped_column(String(16), default=JOB_PROCESSING)
    started_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
    deadline_at: Mapped[dt.datetime] = mapped_column(DateTime)
    ended_at: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)
    text: Mapped[str | None] = mapped_column(Text, nullable=True)
    seed: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    generation_state: Mapped[str | None] = mapped_column(String(16), nullable=True)
    gen_metadata: Mapped[list | None] = mapped_column(JSON, nullable=True)
    #: Tokens generated, as the Horde counts them (priced and shown in the stats).
    tokens: Mapped[int] = mapped_column(Integer, default=0)
    #: Prompt tokens the worker's backend read from its cache, as the worker reported them (at most the prompt's).
    cached_tokens: Mapped[int] = mapped_column(Integer, default=0)
    kudos: Mapped[int] = mapped_column(Integer, default=0)
    finish_reason: Mapped[str | None] = mapped_column(String(16), nullable=True)
    reason: Mapped[str | None] = mapped_column(Text, nullable=True)


class KnownTextModel(Base):
    """A text model some worker declared once: the Horde keeps knowing it after every worker drops it.

    Apart from chat's known_models: a chat model asked of /v1/completions is unknown there, as before."""

    __tablename__ = "known_text_models"

    name: Mapped[str] = mapped_column(String(200), primary_key=True)
    first_declared_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)


_FINAL_STATES_SQL = ", ".join(f"'{state}'" for state in FINAL_STATES)
#: PostgreSQL: an ended request's model rows go with the state change that ends it, whichever path ends it (a
#: submit, a cancel, a fault, the sweeper): the queue's walks never read the history (horde/queueing/model_rows.py).
#: A row a pop holds (it locks the model row it walks to, then takes the request) is left to the sweeper
#: (horde/text/model_rows.py): waiting for it while holding the request would deadlock with that pop.
ENDED_FUNCTION_SQL = """CREATE OR REPLACE FUNCTION horde_text_request_ended()
RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM text_request_models WHERE (request_id, model) IN (
        SELECT request_id, model FROM text_request_models WHERE request_id = NEW.id FOR UPDATE SKIP LOCKED
    );
    RETURN NULL;
END
$$;"""
ENDED_TRIGGER_SQL = (
    "CREATE OR REPLACE TRIGGER text_requests_ended AFTER UPDATE OF state ON text_requests FOR EACH ROW "
    f"WHEN (NEW.state IN ({_FINAL_STATES_SQL}) AND OLD.state NOT IN ({_FINAL_STATES_SQL})) "
    "EXECUTE FUNCTION horde_text_request_ended();"
)
#: SQLite: the same rule, made with the model rows' table.
SQLITE_ENDED_TRIGGER_SQL = (
    "CREATE TRIGGER IF NOT EXISTS text_requests_ended AFTER UPDATE OF state ON text_requests FOR EACH ROW "
    f"WHEN NEW.state IN ({_FINAL_STATES_SQL}) AND OLD.state NOT IN ({_FINAL_STATES_SQL}) "
    "BEGIN DELETE FROM text_request_models WHERE request_id = NEW.id; END"
)
event.listen(TextRequestModel.__table__, "after_create", DDL(SQLITE_ENDED_TRIGGER_SQL).execute_if(dialect="sqlite"))
