"""A batch's ends: its validation's verdict, the wind-down of a cancelled or expired batch, and its final status
with its output and error files.

Each is a compare-and-set on the batch's status, so that two drivers never end a batch twice. A wind-down withdraws
the requests of its lines that still wait for a worker (those being generated go on, are charged as any, and their
lines end in the output), ends the lines never fed with the ending's code, and lets the rest come back as they end.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import bindparam, update

from horde import errors
from horde.accounts.identity import Identity
from horde.batches import collecting, feeding
from horde.batches.models import (
    CANCELLED,
    CANCELLING,
    COMPLETED,
    EXPIRED,
    FAILED,
    FINALIZING,
    IN_PROGRESS,
    QUEUED,
    VALIDATING,
    Batch,
    BatchLine,
)
from horde.batches.parts import BatchParts
from horde.batches.runner import LineRunner, Outcome
from horde.batches.validation import Checked
from horde.files import service as files
from horde.storage import precompiled
from horde.storage.database import table_of
from horde.timeutil import utcnow

_LINES, _BATCHES = table_of(BatchLine), table_of(Batch)
_MARK_WITHDRAWN = (
    update(_LINES)
    .where(_LINES.c.batch_id == bindparam("of_batch"), _LINES.c.line == bindparam("line_no"), _LINES.c.state == QUEUED)
    .values(withdrawn=True)
)
#: What each ending (the status it ends in) leaves on its lines not run.
_ENDINGS: dict[str, tuple[type[errors.HordeError], str]] = {
    CANCELLED: (errors.BatchLineCancelled, "The batch was cancelled before this request ran."),
    EXPIRED: (errors.BatchLineExpired, "The batch's completion window ended before this request ran."),
}


def refusal(ending: str) -> errors.HordeError:
    """The error a line not run gets when its batch ends so (`cancelled`, `expired`)."""
    error_class, message = _ENDINGS[ending]
    return error_class(message)


def withdrawn_by(rc: str | None) -> errors.HordeError | None:
    """The ending's error whose code a withdrawn request carries (its fault_rc), or None for any other code."""
    for error_class, message in _ENDINGS.values():
        if rc == error_class.rc:
            return error_class(message)
    return None


def validated(runtime: BatchParts, batch: Batch, checked: Checked) -> bool:
    """`in_progress` with its count of requests, or `failed` with the errors found."""
    now = utcnow()
    if checked.errors:
        values: dict[str, Any] = {"status": FAILED, "errors": checked.errors, "failed_at": now, "total": 0}
    else:
        values = {"status": IN_PROGRESS, "total": checked.total, "in_progress_at": now}
    return _moved(runtime, batch, (VALIDATING,), values)


def expire(runtime: BatchParts, batch: Batch) -> bool:
    """Past its completion window an in-progress batch winds down, `finalizing`, towards `expired`."""
    values = {"status": FINALIZING, "ending": EXPIRED, "finalizing_at": utcnow()}
    return _moved(runtime, batch, (IN_PROGRESS,), values)


def wind_down(runtime: BatchParts, runner: LineRunner, batch: Batch, user: Identity, rows: list[Any]) -> int:
    """Withdraw the requests of the lines in flight that still wait (once each); end at once the lines whose request
    was never queued, and up to feeding.UNFED_PER_TURN lines never fed. How many lines changed."""
    ending = batch.ending or CANCELLED
    error = refusal(ending)
    never_queued, changed = [], 0
    for row in rows:
        if row.withdrawn:
            continue
        withdrawn = runner.withdraw(batch.endpoint, row.request_id, ending)
        if withdrawn is None:
            never_queued.append((row, Outcome(ok=False, error={"code": error.rc, "message": error.message})))
            continue
        with runtime.db.transaction() as session:
            params = {"of_batch": batch.id, "line_no": row.line}
            precompiled.execute(session.connection(), _MARK_WITHDRAWN, params)
        changed += 1
    changed += collecting.record(runtime, batch.id, never_queued)
    return changed + feeding.end_unfed(runtime, batch, error)


def finish(runtime: BatchParts, batch: Batch) -> bool:
    """Once every line was fed and none is in flight: the final status, with the output file (when any line
    succeeded) and the error file (when any failed), in one transaction."""
    if batch.status not in (IN_PROGRESS, FINALIZING, CANCELLING) or batch.in_flight:
        return False
    if batch.completed + batch.failed < batch.total:  # a batch cancelled while validating has none
        return False
    now = utcnow()
    final = batch.ending or COMPLETED
    values: dict[str, Any] = {"status": final, f"{final}_at": now, "lease_owner": None, "lease_until": None}
    if batch.finalizing_at is None:
        values["finalizing_at"] = now
    with runtime.db.transaction() as session:
        moved = session.connection().execute(
            update(_BATCHES).where(_BATCHES.c.id == batch.id, _BATCHES.c.status == batch.status).values(values)
        )
        if moved.rowcount != 1:
            return False
        outputs = {}
        if batch.completed:
            outputs["output_file_id"] = _output_file(runtime, session, batch, "output", batch.output_bytes)
        if batch.failed:
            outputs["error_file_id"] = _output_file(runtime, session, batch, "error", batch.error_bytes)
        if outputs:
            session.connection().execute(update(_BATCHES).where(_BATCHES.c.id == batch.id).values(outputs))
    return True


def _output_file(runtime: BatchParts, session: Any, batch: Batch, kind: str, size: int) -> str:
    name = f"{batch.id}_{kind}.jsonl"
    file = files.record_output(
        runtime,
        session,
        user_id=batch.user_id,
        batch_id=batch.id,
        filename=name,
        size=size,
        keep_s=batch.output_expires_after_s,
    )
    session.flush()
    return file.id


def _moved(runtime: BatchParts, batch: Batch, expected: tuple[str, ...], values: dict[str, Any]) -> bool:
    with runtime.db.transaction() as session:
        moved = session.connection().execute(
            update(_BATCHES).where(_BATCHES.c.id == batch.id, _BATCHES.c.status.in_(expected)).values(values)
        )
        return moved.rowcount == 1
