"""Processes that share a database without Redis hear each other by reading it, and only while they share it: each
says it is there (server_processes), counts the others, and sets its bus's poll (horde/presence/hearing.py). Two
Hearings on one database stand for two processes; their buses are apart, as two processes' are."""

from __future__ import annotations

import datetime as dt
import logging

from sqlalchemy import func, insert, select, update

from horde.events.bus import LocalEventBus
from horde.presence import hearing
from horde.presence.hearing import PRESENCE_TTL_S, Hearing, start_hearing
from horde.presence.models import ServerProcess
from horde.storage.database import Database
from horde.timeutil import utcnow

POLL_S = 0.05
#: Far longer than POLL_S: a wait that ends before it ended by a poll, not by its timeout.
WAIT_S = 5.0


def _processes(db: Database) -> int:
    with db.read() as session:
        return session.execute(select(func.count()).select_from(ServerProcess)).scalar_one()


def test_a_process_alone_waits_for_events_only_and_polls_while_another_shares_the_database(runtime):
    first_bus, second_bus = LocalEventBus(), LocalEventBus()
    first, second = Hearing(runtime.db, first_bus, POLL_S), Hearing(runtime.db, second_bus, POLL_S)
    waiting = first_bus.subscribe("request:r")

    assert first.beat() is False and first.others == 0
    assert first_bus.poll_interval_s() is None
    assert waiting.wait(POLL_S * 4) is False  # alone: no read of the database comes to end the wait

    assert second.beat() is True and second.others == 1  # it sees the first at once
    assert second_bus.poll_interval_s() == POLL_S
    assert first.beat() is True and first.others == 1  # the first sees it at its next beat
    assert first_bus.poll_interval_s() == POLL_S
    assert waiting.wait(WAIT_S) is True  # woken when polling started, to read the database once
    assert waiting.wait(WAIT_S) is True  # and every POLL_S after: a change made by the other process is read

    _stop_seeing(runtime.db, second)  # stopped, killed: no beat renews its row
    assert first.beat() is True and first.others == 0
    assert first_bus.poll_interval_s() is None
    assert _processes(runtime.db) == 1


def _stop_seeing(db: Database, gone: Hearing) -> None:
    """`gone` was last seen longer ago than the TTL."""
    long_ago = utcnow() - dt.timedelta(seconds=PRESENCE_TTL_S + 1)
    with db.transaction() as session:
        session.execute(update(ServerProcess).where(ServerProcess.id == gone.id).values(seen_at=long_ago))


def test_a_process_not_seen_for_the_ttl_is_gone(runtime):
    long_ago = utcnow() - dt.timedelta(seconds=PRESENCE_TTL_S + 1)
    with runtime.db.transaction() as session:
        session.execute(
            insert(ServerProcess).values(id="killed", host="h", pid=1, started_at=long_ago, seen_at=long_ago)
        )
    alone = Hearing(runtime.db, LocalEventBus(), POLL_S)
    assert alone.beat() is False and alone.others == 0
    assert _processes(runtime.db) == 1  # its own row; the killed process's was dropped


def test_a_start_says_how_the_process_hears_the_others(runtime, caplog, monkeypatch):
    monkeypatch.setattr(hearing.gevent, "spawn", lambda *args: None)  # no beats after the first: the test beats
    with caplog.at_level(logging.INFO, logger=hearing.__name__):
        first = start_hearing(runtime.db, LocalEventBus(), POLL_S)
        second = start_hearing(runtime.db, LocalEventBus(), POLL_S)
    lines = [record.getMessage() for record in caplog.records if record.name == hearing.__name__]
    assert lines[0].startswith("events: one process alone on this database, without Redis")
    assert lines[1].startswith("events: 2 processes share this database without Redis: waiters and long-polling pops")
    assert [record.levelname for record in caplog.records] == ["INFO", "WARNING"]
    assert first is not None and second is not None


class _HearsThroughRedis(LocalEventBus):
    def hears_other_processes(self) -> bool:
        return True


def test_with_redis_a_process_says_so_and_writes_no_presence(runtime, caplog):
    with caplog.at_level(logging.INFO, logger=hearing.__name__):
        assert start_hearing(runtime.db, _HearsThroughRedis(), POLL_S) is None
    assert [record.getMessage() for record in caplog.records] == [
        "events: through Redis: every process hears the others' events at once"
    ]
    assert _processes(runtime.db) == 0
