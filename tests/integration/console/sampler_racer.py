"""A serving process's sampler for tests/integration/console/test_series.py: when its partner is ready too (a
barrier), it samples the given minute."""

from __future__ import annotations

import datetime as dt


def race(database_url: str, barrier, minute: dt.datetime, results) -> None:
    """Sample `minute` and write it; True to `results` when this process's rows won, False when the other's did,
    else the error's text."""
    from horde.console import sampler
    from horde.storage.database import Database

    db = Database(database_url)
    try:
        with db.read() as session:
            rows = sampler.take(session, minute, 300.0)
        barrier.wait()
        with db.transaction() as session:
            results.put(sampler.write(session, rows))
    except Exception as error:  # reported to the test, which fails on it
        results.put(f"{type(error).__name__}: {error}")
    finally:
        db.dispose()
