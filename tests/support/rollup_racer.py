"""A process that rolls a series up at the moments it is given, each when its partner does (a barrier): one of
two serving processes' sweepers, for tests/integration/stats/test_rollup_race.py."""

from __future__ import annotations

import datetime as dt


def race(database_url: str, barrier, moments: list[dt.datetime], results) -> None:
    """At each of `moments`, after the barrier: the chat series' rollup; what it returned (the mark it moved to,
    None, or the error's text) goes to `results` as (round, answer)."""
    from horde.chat import stats
    from horde.stats import rollup
    from horde.storage.database import Database

    db = Database(database_url)
    try:
        for round_, now in enumerate(moments):
            barrier.wait()
            try:
                answer: object = rollup.roll_up_when_due(db, stats.SERVED, now)
            except Exception as error:  # reported to the test, which fails on it
                answer = f"{type(error).__name__}: {error}"
            results.put((round_, answer))
    finally:
        db.dispose()
