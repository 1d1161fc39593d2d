"""How this process hears what the others that share its database change, said once at its start.

A waiter (a client's call, a long-polling pop) wakes on an event. Events reach the other processes through Redis;
without Redis, only the process that published them. A process without Redis therefore says it is there (a row of
server_processes, renewed every PRESENCE_BEAT_S) and counts the others seen within PRESENCE_TTL_S: while another
shares the database, its waiters also read it every HORDE_EVENTS_POLL_S (1 s by default), so a change made by
another process reaches them within that; alone, they wait for events only, which is all one process needs, and
cost nothing more. A process that starts sees those already there at once; they see it at their next beat.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
import os
import socket
import uuid

import gevent
from sqlalchemy import bindparam, delete, func, insert, select, update

from horde.errors import ServiceUnavailable
from horde.events.bus import LocalEventBus
from horde.presence.models import ServerProcess
from horde.storage.database import Database, table_of
from horde.timeutil import utcnow

log = logging.getLogger(__name__)
#: The one line of every start says how the process hears the others, whatever the root logger's level.
log.setLevel(logging.INFO)

#: How often a process renews its row and counts the others.
PRESENCE_BEAT_S = 1.0
#: A process not seen for this long is gone (stopped without leaving, killed, its host lost): its row is dropped.
PRESENCE_TTL_S = 10.0
_PROCESSES = table_of(ServerProcess)
_RENEW = update(_PROCESSES).where(_PROCESSES.c.id == bindparam("me")).values(seen_at=bindparam("now"))
_ARRIVE = insert(_PROCESSES)
_DROP_GONE = delete(_PROCESSES).where(_PROCESSES.c.seen_at < bindparam("gone_before"))
_OTHERS = select(func.count()).select_from(_PROCESSES).where(_PROCESSES.c.id != bindparam("me"))


class Hearing:
    """This process's presence on the database, and the poll it sets on the bus: None alone, `poll_s` while other
    processes share the database."""

    def __init__(self, db: Database, bus: LocalEventBus, poll_s: float):
        self.db, self.bus, self.poll_s = db, bus, poll_s
        self.id = uuid.uuid4().hex
        self.others = 0
        self._row = {"id": self.id, "host": socket.gethostname()[:255], "pid": os.getpid()}

    def beat(self) -> bool:
        """Say this process is there, drop the rows of processes gone, count the others; the bus polls while any
        share the database. Whether the process went from alone to sharing, or back."""
        now = utcnow()
        with self.db.transaction() as session:
            connection = session.connection()
            if not connection.execute(_RENEW, {"me": self.id, "now": now}).rowcount:
                connection.execute(_ARRIVE, {**self._row, "started_at": now, "seen_at": now})
            connection.execute(_DROP_GONE, {"gone_before": now - dt.timedelta(seconds=PRESENCE_TTL_S)})
            others = connection.execute(_OTHERS, {"me": self.id}).scalar_one()
        was, self.others = self.others, others
        self.bus.poll_while_shared(self.poll_s if others else None)
        return bool(was) != bool(others)

    def say(self) -> None:
        """The line that says how this process hears the others: a warning while it shares the database."""
        (log.warning if self.others else log.info)(self.describe())

    def describe(self) -> str:
        if self.others:
            return (
                f"events: {self.others + 1} processes share this database without Redis: waiters and long-polling "
                f"pops read it every {self.poll_s:g} s (HORDE_EVENTS_POLL_S) to hear the others; HORDE_REDIS_URL "
                "makes them hear each other at once"
            )
        return (
            "events: one process alone on this database, without Redis: its own events wake its waiters (while "
            f"another shares the database, they also read it every {self.poll_s:g} s: HORDE_EVENTS_POLL_S)"
        )

    def run(self) -> None:
        """Beat until the process ends, saying when it goes from alone to sharing or back; an outage skips beats
        (the last count holds)."""
        while True:
            gevent.sleep(PRESENCE_BEAT_S)
            try:
                if self.beat():
                    self.say()
            except ServiceUnavailable:
                pass  # the database logs the outage once
            except Exception:
                log.exception("saying this process is there failed; the next beat tries again")


def start_hearing(db: Database, bus: LocalEventBus, poll_s: float) -> Hearing | None:
    """Log, once, how this process hears the others; without Redis, say it is there and keep saying it (a
    greenlet). Returns the process's Hearing, or None with Redis."""
    if bus.hears_other_processes():
        log.info("events: through Redis: every process hears the others' events at once")
        return None
    hearing = Hearing(db, bus, poll_s)
    with contextlib.suppress(ServiceUnavailable):  # a database busy at this moment: the next beat counts again
        hearing.beat()
    hearing.say()
    gevent.spawn(hearing.run)
    return hearing
