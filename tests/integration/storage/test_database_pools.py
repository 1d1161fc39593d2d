"""PostgreSQL's pools keep the connections a burst opened: the next burst reuses them instead of opening (and
the database starting a backend for) new ones. Under bench/load.py the pools used to close every connection
past their size when it was returned, and open it again moments later."""

from __future__ import annotations

import contextlib

import pytest
from sqlalchemy import event, text

#: Per engine: more at once than half its pool, within what it may open (16, 16 and 8).
BURSTS = {"engine": 12, "autocommit_engine": 12, "walking_engine": 6}


def _burst(engine, size: int) -> None:
    """`size` connections checked out at once, each running a statement, then all returned."""
    with contextlib.ExitStack() as stack:
        for _ in range(size):
            stack.enter_context(engine.connect()).execute(text("SELECT 1"))


@pytest.mark.parametrize("engine_name", sorted(BURSTS))
def test_a_second_burst_opens_no_connection(postgresql_runtime, engine_name):
    engine = getattr(postgresql_runtime.db, engine_name)
    opened = []

    def note(*_):
        opened.append(1)

    event.listen(engine, "connect", note)
    try:
        _burst(engine, BURSTS[engine_name])
        first = len(opened)
        _burst(engine, BURSTS[engine_name])
    finally:
        event.remove(engine, "connect", note)
    assert first > 0 and len(opened) == first, f"the second burst opened {len(opened) - first} connections"
    assert engine.pool.checkedin() >= BURSTS[engine_name]
