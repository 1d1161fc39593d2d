"""A batch's lines going out: read from its input file at its cursor, put in flight up to HORDE_BATCH_MAX_IN_FLIGHT,
then queued as requests of its endpoint.

Feeding is one transaction: the lines' rows and the cursor's move, by a compare-and-set on the cursor, so that two
drivers never feed a line twice. Queuing a fed line is the dialect's admission (LineRunner.admit) with the line's
own request id: a request queued by an earlier try whose end was lost (the server killed between the admission
and the line's mark) is found, never queued again. A line is therefore queued once, and charged once.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from typing import Any

from sqlalchemy import bindparam, insert, update

from horde import errors
from horde.accounts.identity import Identity
from horde.batches import collecting
from horde.batches.models import FAILED_LINE, QUEUED, Batch, BatchLine, line_request_id
from horde.batches.parts import BatchParts
from horde.batches.runner import LineRunner, Outcome, Retry
from horde.files import service as files
from horde.files.lines import Line, lines
from horde.storage import precompiled
from horde.storage.database import table_of
from horde.timeutil import utcnow

_LINES, _BATCHES = table_of(BatchLine), table_of(Batch)
_NEW_LINES = insert(_LINES)
_RETRY_AT = (
    update(_LINES)
    .where(_LINES.c.batch_id == bindparam("of_batch"), _LINES.c.line == bindparam("line_no"), _LINES.c.state == QUEUED)
    .values(retry_at=bindparam("retry_at_v"))
)
#: Lines a wind-down ends per turn without running them (the rest of a cancelled or expired batch's file).
UNFED_PER_TURN = 500


def feed(runtime: BatchParts, batch: Batch) -> int:
    """Put the next lines in flight, up to the bound; how many."""
    room = runtime.settings.batch_max_in_flight - batch.in_flight
    if room <= 0 or _unfed(batch) <= 0:
        return 0
    taken, end = _next_lines(runtime, batch, room)
    rows = [
        {
            "batch_id": batch.id,
            "line": line.number,
            "custom_id": request["custom_id"],
            "request_id": line_request_id(batch.id, line.number),
            "state": QUEUED,
            "withdrawn": False,
            "retry_at": None,
            "body": request["body"],
            "output": None,
            "ok": None,
            "finished_at": None,
        }
        for line, request in taken
    ]
    return _advance(runtime, batch, end, rows, {"in_flight": _BATCHES.c.in_flight + len(rows)})


def end_unfed(runtime: BatchParts, batch: Batch, refusal: errors.HordeError) -> int:
    """A cancelled or expired batch's lines never fed: error lines with the ending's code, without a request, up to
    UNFED_PER_TURN a turn; how many."""
    if _unfed(batch) <= 0:
        return 0
    taken, end = _next_lines(runtime, batch, UNFED_PER_TURN)
    at = utcnow()
    error = {"code": refusal.rc, "message": refusal.message}
    rows, size = [], 0
    for line, request in taken:
        request_id = line_request_id(batch.id, line.number)
        text = collecting.output_line(request["custom_id"], request_id, Outcome(ok=False, error=error))
        size += len(text.encode()) + 1
        rows.append(
            {
                "batch_id": batch.id,
                "line": line.number,
                "custom_id": request["custom_id"],
                "request_id": request_id,
                "state": FAILED_LINE,
                "withdrawn": True,
                "retry_at": None,
                "body": None,
                "output": text,
                "ok": False,
                "finished_at": at,
            }
        )
    added = {"failed": _BATCHES.c.failed + len(rows), "error_bytes": _BATCHES.c.error_bytes + size}
    return _advance(runtime, batch, end, rows, added)


def admit(
    runtime: BatchParts, runner: LineRunner, batch: Batch, user: Identity, rows: list[Any], queued: dict[str, bool]
) -> int:
    """Queue the fed lines whose requests do not exist yet (`queued`: runner.progress of the rows' requests), but
    those held back by a retry; refusals end as error lines. How many lines changed."""
    now = utcnow()
    changed, refused = 0, []
    due = [row for row in rows if row.request_id not in queued and (row.retry_at is None or row.retry_at <= now)]
    lines = collecting.works(runtime, batch, due, user)
    results = collecting.at_once(runner.admit, [line for _, line in lines])
    for (row, _), result in zip(lines, results, strict=True):
        if isinstance(result, Outcome):
            refused.append((row, result))
        elif isinstance(result, Retry):
            params = {
                "of_batch": batch.id,
                "line_no": row.line,
                "retry_at_v": now + dt.timedelta(seconds=result.after_s),
            }
            with runtime.db.transaction() as session:
                precompiled.execute(session.connection(), _RETRY_AT, params)
        changed += 1
    return changed + collecting.record(runtime, batch.id, refused)


def _unfed(batch: Batch) -> int:
    return batch.total - batch.completed - batch.failed - batch.in_flight


def _next_lines(runtime: BatchParts, batch: Batch, count: int) -> tuple[list[tuple[Line, dict]], Line | None]:
    """Up to `count` requests from the cursor on (blank lines passed over), and the last line read (None: none)."""
    taken: list[tuple[Line, dict]] = []
    last = None
    for line in _lines_from_cursor(runtime, batch):
        last = line
        if line.blank:
            continue
        taken.append((line, json.loads(line.data or b"")))  # whole and checked at validation
        if len(taken) >= count:
            break
    return taken, last


def _lines_from_cursor(runtime: BatchParts, batch: Batch) -> Iterator[Line]:
    file = files.get(runtime, batch.user_id, batch.input_file_id, param="input_file_id", expired_too=True)
    pieces = files.content(runtime, file, batch.next_offset)
    return lines(
        pieces, start=batch.next_offset, number=batch.next_line, max_line_bytes=runtime.settings.max_body_bytes
    )


def _advance(runtime: BatchParts, batch: Batch, last: Line | None, rows: list[dict], added: dict) -> int:
    """Move the cursor past `last` (a compare-and-set on where it was) with the new lines' rows, in one
    transaction; how many lines (none when another driver moved it first)."""
    if last is None:
        return 0
    moved = (
        update(_BATCHES)
        .where(_BATCHES.c.id == batch.id, _BATCHES.c.next_line == batch.next_line)
        .values(next_line=last.number + 1, next_offset=last.end, **added)
    )
    with runtime.db.transaction() as session:
        if session.connection().execute(moved).rowcount != 1:
            return 0
        if rows:
            precompiled.execute_many(session.connection(), _NEW_LINES, rows)
    batch.next_line, batch.next_offset = last.number + 1, last.end
    return len(rows)
