"""Batches and their lines.

A batch row is OpenAI's Batch object and its driver's state: the cursor into its input file (the next line and its
byte offset), its lines in flight, and the lease of the server process driving it. A line row exists once the line
is fed: it names the request made of it (an id derived from the batch and the line, so that queuing it again finds
that request rather than making a second: whether the request exists is whether the line was queued), keeps its body
while it runs, and its output line once it ended. Lines
not yet fed are rows of none: a 50,000-line batch holds HORDE_BATCH_MAX_IN_FLIGHT lines of work at once.
"""

from __future__ import annotations

import datetime as dt
import uuid
from enum import StrEnum

from sqlalchemy import JSON, BigInteger, Boolean, DateTime, ForeignKey, Index, Integer, String, Text, text
from sqlalchemy.orm import Mapped, mapped_column

from horde.storage.database import Base
from horde.timeutil import utcnow


class BatchStatus(StrEnum):
    """OpenAI's statuses of a batch; the last four are final."""

    VALIDATING = "validating"
    IN_PROGRESS = "in_progress"
    FINALIZING = "finalizing"
    CANCELLING = "cancelling"
    COMPLETED = "completed"
    FAILED = "failed"
    EXPIRED = "expired"
    CANCELLED = "cancelled"


VALIDATING, IN_PROGRESS, FINALIZING = BatchStatus.VALIDATING, BatchStatus.IN_PROGRESS, BatchStatus.FINALIZING
CANCELLING, COMPLETED, FAILED = BatchStatus.CANCELLING, BatchStatus.COMPLETED, BatchStatus.FAILED
EXPIRED, CANCELLED = BatchStatus.EXPIRED, BatchStatus.CANCELLED
#: A driver works on these; the others are final.
ACTIVE = (VALIDATING, IN_PROGRESS, FINALIZING, CANCELLING)
FINAL = (COMPLETED, FAILED, EXPIRED, CANCELLED)


class LineState(StrEnum):
    """A fed line: its request queued (or about to be), or ended with a line in the output or the error file."""

    QUEUED = "queued"
    DONE = "done"
    FAILED = "failed"


QUEUED, DONE, FAILED_LINE = LineState.QUEUED, LineState.DONE, LineState.FAILED
_LINE_REQUESTS = uuid.UUID("6f1c2b3a-9d4e-4f5a-8b7c-1e2d3c4b5a69")


def new_batch_id() -> str:
    return "batch_" + uuid.uuid4().hex


def line_request_id(batch_id: str, line: int) -> str:
    """The id of the request made of a line: the same whoever feeds it, so that a line is queued once."""
    return str(uuid.uuid5(_LINE_REQUESTS, f"{batch_id}:{line}"))


def output_line_id(request_id: str) -> str:
    """The `id` of a line in the output or error file."""
    return "batch_req_" + request_id.replace("-", "")


class Batch(Base):
    __tablename__ = "batches"
    __table_args__ = (
        # A user's batches in the order the list pages them (newest first), and those not yet ended.
        Index("ix_batches_user_created", "user_id", "created_at", "id"),
        # The batches a driver may take: the active ones, by their lease.
        Index("ix_batches_status_lease", "status", "lease_until"),
    )

    id: Mapped[str] = mapped_column(String(40), primary_key=True, default=new_batch_id)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"))
    #: The shared key the batch's lines are paid with (its user is the key's owner), if any.
    shared_key_id: Mapped[str | None] = mapped_column(String(36), nullable=True)
    endpoint: Mapped[str] = mapped_column(String(32))
    input_file_id: Mapped[str] = mapped_column(String(40))
    completion_window: Mapped[str] = mapped_column(String(8))
    #: The client's metadata (at most 16 pairs of strings); `metadata` is the declarative base's own name.
    batch_metadata: Mapped[dict | None] = mapped_column("metadata", JSON, nullable=True)
    status: Mapped[str] = mapped_column(String(16), default=VALIDATING)
    #: Validation errors, OpenAI's `errors.data` items (code, message, param, line).
    errors: Mapped[list | None] = mapped_column(JSON, nullable=True)
    #: How long its output and error files are kept after it ended (OpenAI's output_expires_after); None: as any file.
    output_expires_after_s: Mapped[int | None] = mapped_column(Integer, nullable=True)
    #: Why the batch is winding down: CANCELLED or EXPIRED (its lines not run end with that code), else None.
    ending: Mapped[str | None] = mapped_column(String(16), nullable=True)

    created_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
    expires_at: Mapped[dt.datetime] = mapped_column(DateTime)
    in_progress_at: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)
    finalizing_at: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)
    completed_at: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)
    failed_at: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)
    expired_at: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)
    cancelling_at: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)
    cancelled_at: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)

    total: Mapped[int] = mapped_column(Integer, default=0)
    completed: Mapped[int] = mapped_column(Integer, default=0)
    failed: Mapped[int] = mapped_column(Integer, default=0)
    output_file_id: Mapped[str | None] = mapped_column(String(40), nullable=True)
    error_file_id: Mapped[str | None] = mapped_column(String(40), nullable=True)
    #: The output and error lines' bytes so far, each with its newline: the files' sizes when the batch ends.
    output_bytes: Mapped[int] = mapped_column(BigInteger, default=0)
    error_bytes: Mapped[int] = mapped_column(BigInteger, default=0)
    input_tokens: Mapped[int] = mapped_column(BigInteger, default=0)
    cached_tokens: Mapped[int] = mapped_column(BigInteger, default=0)
    output_tokens: Mapped[int] = mapped_column(BigInteger, default=0)
    reasoning_tokens: Mapped[int] = mapped_column(BigInteger, default=0)
    #: What the batch's lines cost its user so far.
    kudos_charged: Mapped[int] = mapped_column(BigInteger, default=0)

    # The driver's state (horde/batches/driver.py).
    #: The number of the next line to feed (from 1), and the byte offset where it begins in the input file.
    next_line: Mapped[int] = mapped_column(Integer, default=1)
    next_offset: Mapped[int] = mapped_column(BigInteger, default=0)
    #: Lines fed and not yet ended.
    in_flight: Mapped[int] = mapped_column(Integer, default=0)
    #: The server process driving the batch, until `lease_until`; another may take it after.
    lease_owner: Mapped[str | None] = mapped_column(String(64), nullable=True)
    lease_until: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)


class BatchLine(Base):
    __tablename__ = "batch_lines"
    __table_args__ = (
        # A batch's lines in flight, which each turn of its driver reads. Partial: the lines that ended (all of a
        # batch's, once it ends) add no entry.
        Index(
            "ix_batch_lines_queued",
            "batch_id",
            "line",
            postgresql_where=text("state = 'queued'"),
            sqlite_where=text("state = 'queued'"),
        ),
        # Its output or error file, read in the lines' order.
        Index("ix_batch_lines_output", "batch_id", "ok", "line"),
    )

    batch_id: Mapped[str] = mapped_column(ForeignKey("batches.id", ondelete="CASCADE"), primary_key=True)
    line: Mapped[int] = mapped_column(Integer, primary_key=True)
    custom_id: Mapped[str] = mapped_column(String(512))
    #: The request made of the line (line_request_id).
    request_id: Mapped[str] = mapped_column(String(36))
    state: Mapped[str] = mapped_column(String(12), default=QUEUED)
    #: A refusal that may pass (no worker online for its model, the database away): not tried again before this.
    retry_at: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)
    #: The batch ending (cancelled, expired) withdrew its request, or tried to: once.
    withdrawn: Mapped[bool] = mapped_column(Boolean, default=False)
    #: The request's body, while the line runs (its answer is built from it); None once it ended.
    body: Mapped[dict | None] = mapped_column(JSON, nullable=True)
    #: Its line of the output file (ok) or of the error file (not ok), JSON without the newline, once it ended.
    output: Mapped[str | None] = mapped_column(Text, nullable=True)
    ok: Mapped[bool | None] = mapped_column(Boolean, nullable=True)
    finished_at: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)
