"""The garbage collector of a serving process.

A serving process keeps what it builds at start (modules, the app, SQLAlchemy's metadata and statement
caches) for its whole life, and allocates briefly lived objects by the million: with CPython's defaults the
cyclic collector ran every 700 net allocations and walked the long-lived heap at every full collection,
4.5 % of a gunicorn process's CPU under bench/load.py (perf). Frozen at start and collected young every
YOUNG_COLLECTION_ALLOCATIONS, it took 0.1 to 0.2 %.
"""

from __future__ import annotations

import gc

#: Net allocations between two collections of the youngest generation (CPython's default is 700). Cycles
#: of the requests in flight wait a little longer to be freed; everything else is freed by reference counts.
YOUNG_COLLECTION_ALLOCATIONS = 7_000


def settle_for_serving() -> None:
    """Call once the process has built its app, before it serves: what exists now is kept out of every
    later collection, and young collections run less often."""
    gc.collect()
    gc.freeze()
    _, middle, oldest = gc.get_threshold()
    gc.set_threshold(YOUNG_COLLECTION_ALLOCATIONS, middle, oldest)
