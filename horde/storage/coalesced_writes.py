"""Bookkeeping writes of one kind, coalesced per process: those that arrive while the last one runs go
together in the next, as one statement (a group commit).

Under load the writes that nothing waits for (a delivered answer's release: horde/oai/idempotency.py)
would each cost a round trip and a transaction of their own; coalesced, a busy process sends one for all
that arrived meanwhile, and an idle one sends each at once, as before. A writer's writes start at least
BUSY_WRITE_INTERVAL_S apart: under load a write ends long before the next item arrives, and without the
interval a batch held one item, one statement per request as before. A write goes out after the call
that asked for it returned, so only writes no caller reads back belong here. Outside gevent (the CLI, the
tests' own process) each write runs in its caller, at once, as an uncoalesced write would.

While writes wait or run they count as requests in flight for the drain (horde/events/drain.py), so a process
that shuts down gracefully writes them before it exits. A database outage delays them (horde/storage/settle.py);
a process killed outright loses the ones it had not written, which for a release means only that an SDK
retry of that body may still attach to the request and get its answer again.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable, Hashable, Sequence
from typing import Generic, TypeVar

from gevent import monkey

from horde.events.drain import DRAIN
from horde.storage.settle import settle

log = logging.getLogger(__name__)

#: The least time from the start of one of a writer's writes to the start of its next. At 125 releases/s in a
#: process, batches of about three; an item that finds the writer idle that long is written at once.
BUSY_WRITE_INTERVAL_S = 0.025

Item = TypeVar("Item", bound=Hashable)
#: Writes all of its items in one statement; an item appears once in each call.
WriteAll = Callable[[Sequence[Item]], None]


class CoalescedWrites(Generic[Item]):
    """One kind of write: `write_all(items)` writes many at once. `background`: coalesce in a writer of its own
    (default: when this process runs on gevent)."""

    def __init__(
        self,
        what: str,
        write_all: WriteAll[Item],
        *,
        background: bool | None = None,
        busy_interval_s: float = BUSY_WRITE_INTERVAL_S,
    ):
        self._what = what
        self._busy_interval_s = busy_interval_s
        self._write_all = write_all
        self._background = background
        self._lock = threading.Lock()
        self._pending: list[Item] = []
        self._arrived = threading.Event()
        self._writer: threading.Thread | None = None

    def add(self, item: Item) -> None:
        """Write `item` now (outside gevent), or with the others that arrive before the writer's next turn."""
        if not self._coalescing():
            self._write_all([item])
            return
        DRAIN.request_started()
        with self._lock:
            self._pending.append(item)
            if self._writer is None:
                self._writer = threading.Thread(target=self._run, name=f"horde-{self._what}", daemon=True)
                self._writer.start()
        self._arrived.set()

    def _coalescing(self) -> bool:
        if self._background is None:
            self._background = monkey.is_module_patched("threading")
        return self._background

    def _run(self) -> None:
        last_started = -self._busy_interval_s
        while True:
            self._arrived.wait()
            wait_s = last_started + self._busy_interval_s - time.monotonic()
            if wait_s > 0:
                time.sleep(wait_s)  # what arrives meanwhile joins this write
            last_started = time.monotonic()
            self._arrived.clear()
            with self._lock:
                items, self._pending = self._pending, []
            try:
                for batch in distinct_rounds(items):
                    settle(f"{self._what} ({len(batch)})", functools.partial(self._write_all, batch))
            except Exception:  # the writer serves the whole process: it logs and goes on
                log.exception("%s failed for %d items", self._what, len(items))
            finally:
                for _ in items:
                    DRAIN.request_ended()


def distinct_rounds(items: Sequence[Item]) -> list[list[Item]]:
    """`items` in rounds where each appears once: an item added twice (two holders of one request released at
    once) is written twice, as two adds would have been."""
    rounds: list[list[Item]] = []
    seen: dict[Item, int] = {}
    for item in items:
        index = seen.get(item, 0)
        seen[item] = index + 1
        if index == len(rounds):
            rounds.append([])
        rounds[index].append(item)
    return rounds
