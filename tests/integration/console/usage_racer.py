"""A serving process's sweeper for tests/integration/console/test_usage.py: at each moment, after its partner is
ready too (a barrier), the chat and the text series' rollups, in the order given."""

from __future__ import annotations

import datetime as dt


def race(database_url: str, barrier, moments: list[dt.datetime], reverse: bool, results) -> None:
    """Roll both series up at each of `moments`; None to `results` when every rollup ran, else the error's text."""
    from horde.chat import stats as chat_stats
    from horde.stats import rollup
    from horde.storage.database import Database
    from horde.text import stats as text_stats

    db = Database(database_url)
    series = [chat_stats.SERVED, text_stats.SERVED]
    outcome = None
    try:
        for now in moments:
            barrier.wait()
            for rows in reversed(series) if reverse else series:
                try:
                    rollup.roll_up_when_due(db, rows, now)
                except Exception as error:  # reported to the test, which fails on it
                    outcome = outcome or f"{type(error).__name__}: {error}"
    finally:
        db.dispose()
        results.put(outcome)
