"""A batch's lines coming back: the lines in flight whose requests ended, each written once as its output line.

A line ends by a compare-and-set from `queued`, in the same transaction as the batch's counts, so that two drivers
(or one that lost its lease meanwhile) never write a line twice nor count it twice. The request itself was charged
once by its submit (horde/chat/lifecycle.py); the output line only reports it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

import gevent.pool
from sqlalchemy import bindparam, select, update

from horde.accounts.identity import Identity
from horde.batches.models import DONE, FAILED_LINE, QUEUED, Batch, BatchLine, output_line_id
from horde.batches.parts import BatchParts
from horde.batches.runner import LineRunner, LineWork, Outcome
from horde.storage import precompiled
from horde.storage.database import table_of
from horde.timeutil import utcnow

_LINES, _BATCHES = table_of(BatchLine), table_of(Batch)
#: Lines a turn queues or answers at once (collecting.at_once).
LINES_AT_ONCE = 8
#: A batch's lines in flight, without their bodies: a turn reads them all, and most are still waiting.
_IN_FLIGHT = (
    select(_LINES.c.line, _LINES.c.custom_id, _LINES.c.request_id, _LINES.c.retry_at, _LINES.c.withdrawn)
    .where(_LINES.c.batch_id == bindparam("batch_id"), _LINES.c.state == QUEUED)
    .order_by(_LINES.c.line)
)
#: The bodies of some of them: those a turn queues or answers.
_BODIES = select(_LINES.c.line, _LINES.c.body).where(
    _LINES.c.batch_id == bindparam("batch_id"), _LINES.c.line.in_(bindparam("lines", expanding=True))
)
_END_LINE = (
    update(_LINES)
    .where(_LINES.c.batch_id == bindparam("of_batch"), _LINES.c.line == bindparam("line_no"), _LINES.c.state == QUEUED)
    .values(
        state=bindparam("new_state"),
        output=bindparam("output_v"),
        ok=bindparam("ok_v"),
        body=None,
        finished_at=bindparam("at"),
    )
)


def in_flight(runtime: BatchParts, batch_id: str) -> list[Any]:
    """The batch's lines fed and not yet ended (at most HORDE_BATCH_MAX_IN_FLIGHT), in order."""
    with runtime.db.read() as session:
        return list(precompiled.execute(session.connection(), _IN_FLIGHT, {"batch_id": batch_id}).all())


def works(runtime: BatchParts, batch: Batch, rows: list[Any], user: Identity) -> list[tuple[Any, LineWork]]:
    """The lines `rows` with their bodies, read in one statement, as the runner takes them."""
    if not rows:
        return []
    with runtime.db.read() as session:
        params = {"batch_id": batch.id, "lines": [row.line for row in rows]}
        bodies = dict(precompiled.execute(session.connection(), _BODIES, params).all())
    return [
        (
            row,
            LineWork(
                batch.id, batch.endpoint, row.line, row.custom_id, row.request_id, bodies.get(row.line) or {}, user
            ),
        )
        for row in rows
    ]


def collect(
    runtime: BatchParts, runner: LineRunner, batch: Batch, user: Identity, rows: list[Any], queued: dict[str, bool]
) -> int:
    """Write the lines whose requests ended (`queued`: runner.progress of the rows' requests); how many."""
    ended = works(runtime, batch, [row for row in rows if queued.get(row.request_id)], user)
    answers = at_once(lambda line: runner.outcome(line, batch.ending), [line for _, line in ended])
    return record(runtime, batch.id, [(row, answer) for (row, _), answer in zip(ended, answers, strict=True)])


def at_once(step: Callable[[LineWork], Any], lines: list[LineWork]) -> list[Any]:
    """`step` of each line, LINES_AT_ONCE at a time, in the lines' order: a line's admission or answer waits on the
    database (a round trip, a commit, a row lock), so that one after the other a batch would go at the pace of one
    round trip; several at once overlap their waits."""
    if len(lines) <= 1:
        return [step(line) for line in lines]
    return list(gevent.pool.Pool(LINES_AT_ONCE).imap(step, lines))


def output_line(custom_id: str, request_id: str, outcome: Outcome) -> str:
    """OpenAI's line of an output or error file, without its newline."""
    line = {
        "id": output_line_id(request_id),
        "custom_id": custom_id,
        "response": outcome.response,
        "error": outcome.error,
    }
    return json.dumps(line, separators=(",", ":"), ensure_ascii=False)


def record(runtime: BatchParts, batch_id: str, outcomes: Iterable[tuple[Any, Outcome]]) -> int:
    """End each line with its outcome (a compare-and-set from queued) and add what ended to the batch's counts, in
    one transaction; how many lines this call ended."""
    outcomes = list(outcomes)
    if not outcomes:
        return 0
    at, ended = utcnow(), 0
    totals = dict.fromkeys(
        (
            "completed",
            "failed",
            "output_bytes",
            "error_bytes",
            "input_tokens",
            "cached_tokens",
            "output_tokens",
            "reasoning_tokens",
            "kudos_charged",
        ),
        0,
    )
    with runtime.db.transaction() as session:
        connection = session.connection()
        for row, outcome in outcomes:
            text = output_line(row.custom_id, row.request_id, outcome)
            params = {
                "of_batch": batch_id,
                "line_no": row.line,
                "new_state": DONE if outcome.ok else FAILED_LINE,
                "output_v": text,
                "ok_v": outcome.ok,
                "at": at,
            }
            if precompiled.execute(connection, _END_LINE, params).rowcount != 1:
                continue  # another driver wrote it first
            ended += 1
            size = len(text.encode()) + 1
            totals["completed" if outcome.ok else "failed"] += 1
            totals["output_bytes" if outcome.ok else "error_bytes"] += size
            totals["input_tokens"] += outcome.usage.input_tokens
            totals["cached_tokens"] += outcome.usage.cached_tokens
            totals["output_tokens"] += outcome.usage.output_tokens
            totals["reasoning_tokens"] += outcome.usage.reasoning_tokens
            totals["kudos_charged"] += outcome.kudos
        if ended:
            added = {name: _BATCHES.c[name] + value for name, value in totals.items() if value}
            added["in_flight"] = _BATCHES.c.in_flight - ended
            connection.execute(update(_BATCHES).where(_BATCHES.c.id == batch_id).values(added))
    return ended
