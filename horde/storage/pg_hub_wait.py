"""psycopg connections that wait for their socket on gevent's hub, with one watcher per direction for life.

Under gevent's patching psycopg waits through the patched `select.poll`, which builds a poll object, starts a
watcher and tears both down again on every wait: a statement waits at least twice (send, then its answer), and
that machinery cost about as much CPU as the rest of the driver's work for a short statement (measured at 115 to
139 µs per `SELECT 1` from 8 greenlets, against 68 to 71 µs waiting here). gevent's own sockets keep their
read and write watchers for their life in the same way.

`wait` overrides psycopg's `Connection.wait(gen, interval, timeout)`, the signature of psycopg 3.3.6 and later
(requirements.txt's bound): before it, a bounded wait (`notifies(timeout=...)`) was asked as `interval` alone,
which a wait on the hub would have ignored, waiting for ever.
"""

from __future__ import annotations

from typing import Any

import psycopg
from gevent import monkey
from gevent.hub import Waiter, get_hub
from psycopg import waiting

#: libev's event bits, as gevent's watchers take and report them.
_EV_READ = 1
_EV_WRITE = 2
_EVENTS_OF_WAIT = {waiting.WAIT_R: _EV_READ, waiting.WAIT_W: _EV_WRITE, waiting.WAIT_RW: _EV_READ | _EV_WRITE}


def waits_on_the_hub() -> bool:
    """Whether this process runs on gevent's patched sockets, where psycopg's own waits take the patched poll."""
    return monkey.is_module_patched("select")


class HubWaitConnection(psycopg.Connection):
    """A connection whose statements wait on the hub (`wait` is psycopg's one door for a statement's waits)."""

    _watchers: dict[tuple[int, int], Any] | None = None

    def wait(self, gen: Any, interval: float = 0.1, timeout: float | None = None) -> Any:
        """`interval` is how often psycopg's own loops wake to look again; the hub wakes on readiness instead."""
        if timeout is not None:  # a bounded wait (notifies(timeout=...)) is rare: psycopg's own, deadline included
            return super().wait(gen, interval=interval, timeout=timeout)
        fileno = self.pgconn.socket
        try:
            wanted = next(gen)
            while True:
                wanted = gen.send(self._wait_for(fileno, _EVENTS_OF_WAIT[wanted]))
        except StopIteration as done:
            return done.value

    def _wait_for(self, fileno: int, events: int) -> int:
        """Block this greenlet until the socket is ready for `events`; psycopg's READY bits of what it is."""
        watchers = self._watchers
        if watchers is None:
            watchers = self._watchers = {}
        loop = get_hub().loop
        watcher = watchers.get((fileno, events))
        if watcher is None or watcher.loop is not loop:  # a hub is per OS thread: a watcher serves its own loop only
            watcher = watchers[(fileno, events)] = loop.io(fileno, events)
        waiter = Waiter()
        watcher.start(waiter.switch, pass_events=True)
        try:
            ready = waiter.get()
        finally:
            watcher.stop()
        if not ready & events:  # libev's error bit alone: let libpq find what happened to the socket
            ready = events
        return (waiting.READY_R if ready & _EV_READ else 0) | (waiting.READY_W if ready & _EV_WRITE else 0)

    def close(self) -> None:
        watchers, self._watchers = self._watchers, None
        for watcher in (watchers or {}).values():
            watcher.close()
        super().close()
