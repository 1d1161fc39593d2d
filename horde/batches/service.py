"""What the batch routes do: create a batch of an uploaded file, read, list and cancel a user's batches, and read a
batch's output and error files. Every read is the owner's: another user's batch is not found."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from typing import Any

from sqlalchemy import and_, bindparam, func, or_, select, update

from horde import errors
from horde.accounts.identity import Identity
from horde.accounts.models import User
from horde.batches.models import (
    ACTIVE,
    CANCELLED,
    CANCELLING,
    IN_PROGRESS,
    VALIDATING,
    Batch,
    BatchLine,
)
from horde.batches.parts import BatchParts
from horde.files import service as files
from horde.files.models import BATCH as BATCH_PURPOSE
from horde.files.models import StoredFile
from horde.storage import precompiled
from horde.storage.database import table_of
from horde.timeutil import utcnow

ENDPOINTS = ("/v1/chat/completions", "/v1/completions", "/v1/responses")
COMPLETION_WINDOWS = {"24h": 24 * 3600}
LIST_DEFAULT_LIMIT, LIST_MAX_LIMIT = 20, 100
#: Lines of an output file read per statement while it is served.
OUTPUT_PAGE_LINES = 500

_LINES = table_of(BatchLine)
_OUTPUT_PAGE = (
    select(_LINES.c.line, _LINES.c.output)
    .where(
        _LINES.c.batch_id == bindparam("batch_id"),
        _LINES.c.ok == bindparam("ok"),
        _LINES.c.line > bindparam("after"),
    )
    .order_by(_LINES.c.line)
    .limit(OUTPUT_PAGE_LINES)
)


def create(
    runtime: BatchParts,
    user: Identity,
    *,
    input_file_id: str,
    endpoint: str,
    window: str,
    metadata: dict | None,
    output_expires_after_s: int | None = None,
) -> Batch:
    """A batch of the user's uploaded file, `validating` until a driver checked its lines. Refused: a file not found
    or not uploaded for the Batch API, a user with HORDE_BATCH_MAX_ACTIVE batches running (the anonymous user,
    by the authorization table's RUN_BATCHES row, at the route)."""
    file = files.get(runtime, user.id, input_file_id, param="input_file_id")
    if file.purpose != BATCH_PURPOSE:
        raise errors.BadRequest(
            f"The file {input_file_id} was not uploaded with purpose 'batch'.", param="input_file_id"
        )
    now = utcnow()
    batch = Batch(
        user_id=user.id,
        shared_key_id=user.shared_key_id,
        endpoint=endpoint,
        input_file_id=input_file_id,
        completion_window=window,
        batch_metadata=metadata,
        output_expires_after_s=output_expires_after_s,
        status=VALIDATING,
        created_at=now,
        expires_at=now + dt.timedelta(seconds=COMPLETION_WINDOWS[window]),
    )
    with runtime.db.transaction() as session:
        limit = runtime.settings.batch_max_active
        if _active_count(session, user.id, lock=True) >= limit:
            raise errors.TooManyBatches(
                f"At most {limit} batches of a user run at once; wait for one to end, or cancel one.",
                metadata={"max_active": limit},
            )
        session.add(batch)
    return batch


def _active_count(session: Any, user_id: int, *, lock: bool) -> int:
    """The user's batches not yet ended; with `lock` (PostgreSQL), counted under the user's row lock, so that two
    creations of one user count one after the other."""
    if lock and session.get_bind().dialect.name == "postgresql":
        session.execute(select(User.id).where(User.id == user_id).with_for_update())
    count = select(func.count()).where(Batch.user_id == user_id, Batch.status.in_(ACTIVE))
    return int(session.scalar(count) or 0)


def get(runtime: BatchParts, user_id: int, batch_id: str) -> Batch:
    with runtime.db.read() as session:
        batch = session.get(Batch, batch_id)
    if batch is None or batch.user_id != user_id:
        raise errors.BatchNotFound(f"No such batch: {batch_id}", param="batch_id")
    return batch


def page(runtime: BatchParts, user_id: int, *, after: str | None, limit: int) -> tuple[list[Batch], bool]:
    """A page of the user's batches, newest first, from the one after `after`; and whether more follow."""
    conditions: list[Any] = [Batch.user_id == user_id]
    with runtime.db.read() as session:
        if after is not None:
            mark = session.get(Batch, after)
            if mark is None or mark.user_id != user_id:
                raise errors.BatchNotFound(f"No such batch: {after}", param="after")
            conditions.append(
                or_(Batch.created_at < mark.created_at, and_(Batch.created_at == mark.created_at, Batch.id < mark.id))
            )
        query = select(Batch).where(*conditions).order_by(Batch.created_at.desc(), Batch.id.desc()).limit(limit + 1)
        rows = list(session.scalars(query))
    return rows[:limit], len(rows) > limit


def cancel(runtime: BatchParts, user_id: int, batch_id: str) -> Batch:
    """Start the batch's cancel: `cancelling` until its driver has withdrawn what waits and what runs has ended,
    then `cancelled` with what ended in its files. A batch cancelling or cancelled already answers as it is (a cancel
    is idempotent); one that has ended otherwise is refused."""
    batch = get(runtime, user_id, batch_id)
    now = utcnow()
    with runtime.db.transaction() as session:
        started = session.execute(
            update(Batch)
            .where(Batch.id == batch_id, Batch.status.in_((VALIDATING, IN_PROGRESS)))
            .values(status=CANCELLING, ending=CANCELLED, cancelling_at=now)
        ).rowcount  # type: ignore[attr-defined]  # an UPDATE's result is a CursorResult
    batch = get(runtime, user_id, batch_id)
    if not started and batch.status not in (CANCELLING, CANCELLED):
        raise errors.BatchNotCancellable(
            f"Cannot cancel a batch with status '{batch.status}'.", param="batch_id", metadata={"status": batch.status}
        )
    return batch


def reads(runtime: BatchParts, file_id: str) -> bool:
    """Whether a batch not yet ended reads the file (so that deleting it is refused)."""
    with runtime.db.read() as session:
        found = session.scalar(
            select(Batch.id).where(Batch.input_file_id == file_id, Batch.status.in_(ACTIVE)).limit(1)
        )
    return found is not None


def output_content(runtime: BatchParts, file: StoredFile) -> Iterator[bytes]:
    """A batch's output or error file: its ended lines' output lines, in the lines' order, a page at a time."""
    with runtime.db.read() as session:
        batch = session.get(Batch, file.batch_id)
    if batch is None:
        return
    ok = batch.output_file_id == file.id
    after = 0
    while True:
        with runtime.db.read() as session:
            params = {"batch_id": batch.id, "ok": ok, "after": after}
            rows = precompiled.execute(session.connection(), _OUTPUT_PAGE, params).all()
        if not rows:
            return
        yield b"".join(output.encode() + b"\n" for _, output in rows)
        after = rows[-1][0]
        if len(rows) < OUTPUT_PAGE_LINES:
            return
