"""Long loops over a request's items that let the other greenlets of the process run; a turn passed to
the greenlets an event just woke.

Under gevent one CPU-bound handler holds the whole process: a body of 10,000
messages screened, validated and fitted in one go would stall every other
connection (health checks included) for its whole duration. Loops whose length
the client chooses iterate through `pause_every`, which yields to the hub every
few hundred items; outside gevent (tests, the CLI) it costs nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import TypeVar

import gevent
from gevent import monkey

ITEMS_BETWEEN_PAUSES = 256
Item = TypeVar("Item")


def pause_every(items: Sequence[Item], every: int = ITEMS_BETWEEN_PAUSES) -> Iterable[Item]:
    """`items`, with a pause for the other greenlets every `every` items when the process runs on gevent."""
    if len(items) <= every or not monkey.is_module_patched("socket"):
        return items
    return _paused(items, every)


def _paused(items: Sequence[Item], every: int) -> Iterator[Item]:
    for index, item in enumerate(items):
        if index and index % every == 0:
            gevent.sleep(0)
        yield item


def pass_turn() -> None:
    """Let the greenlets woken just now run before this one goes on, when the process runs on gevent.

    A handler that published a change (a new job, a submitted reply) would otherwise finish its own
    answer first: the woken long-poll's claim, or the waiter's answer to its client, waits for it,
    though they are what the other side is waiting for."""
    if monkey.is_module_patched("socket"):
        gevent.sleep(0)
