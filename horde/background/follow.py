"""Following a background request from what the database holds: its state and its kept progress, in order.

Any process can follow any background request: nothing is read from another process's memory. The follower
listens to the request's channels (its changes of state, its job's start and progress) before its first read,
then reads the request's row and the progress entries it has not read yet on each event, and at least every
`quiet_s` (a lost event delays it by no more). It reads the state before the entries: once it reads a final
state, the entries it reads next are all there are (no progress is kept after the end).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sqlalchemy import bindparam, select
from sqlalchemy.orm import Session

from horde.background.models import ProgressEntry
from horde.chat import request_rows
from horde.chat.models import FINAL_STATES, ChatRequest
from horde.events.bus import progress_channel, request_channel
from horde.events.drain import DRAIN
from horde.storage.database import table_of

if TYPE_CHECKING:
    from horde.runtime import Runtime

#: Progress entries read at once: a replay of a long reply reads it page by page.
ENTRIES_PAGE = 256
_ENTRIES = table_of(ProgressEntry)
_ENTRIES_AFTER = (
    select(_ENTRIES.c.seq, _ENTRIES.c.job_id, _ENTRIES.c.content, _ENTRIES.c.reasoning)
    .where(_ENTRIES.c.request_id == bindparam("request"), _ENTRIES.c.seq > bindparam("after"))
    .order_by(_ENTRIES.c.seq)
    .limit(ENTRIES_PAGE)
)


@dataclass
class Snapshot:
    """The request as read (None: gone; its payload only once final), the entries kept since the last
    snapshot, and whether it is the last one (the request ended, or is gone, and every entry was read)."""

    request: ChatRequest | None
    entries: list[Any] = field(default_factory=list)
    last: bool = False


@dataclass
class Quiet:
    """Nothing changed for a while: a stream sends a keepalive."""


def entries_after(session: Session, request_id: str, after_seq: int) -> list[Any]:
    """Up to ENTRIES_PAGE entries of the request after `after_seq`, in order (rows: seq, job_id, content,
    reasoning)."""
    return list(session.execute(_ENTRIES_AFTER, {"request": request_id, "after": after_seq}).all())


def follow(runtime: Runtime, request_id: str, quiet_s: float) -> Iterator[Snapshot | Quiet]:
    """Snapshots of the request until the last one; a Quiet after each `quiet_s` without an event. Ends early,
    without a last snapshot, when this process shuts down (the request goes on: a client follows it elsewhere)."""
    after_seq = 0
    channels = (request_channel(request_id), progress_channel(request_id))
    with runtime.bus.subscribe(*channels) as subscription, DRAIN.waiter():
        while not DRAIN.ending:
            with runtime.db.read() as session:
                request = request_rows.follow_request(session, request_id)
                entries = entries_after(session, request_id, after_seq)
            del session
            if entries:
                after_seq = entries[-1].seq
            more = len(entries) == ENTRIES_PAGE
            last = not more and (request is None or request.state in FINAL_STATES)
            yield Snapshot(request, entries, last)
            if last:
                return
            if not more and not subscription.wait(quiet_s):
                yield Quiet()


def every_entry(runtime: Runtime, request_id: str) -> Iterator[Any]:
    """Every entry kept for the request, in order, a page at a time."""
    after_seq = 0
    while True:
        with runtime.db.read() as session:
            page = entries_after(session, request_id, after_seq)
        yield from page
        if len(page) < ENTRIES_PAGE:
            return
        after_seq = page[-1].seq
