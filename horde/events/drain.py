"""Graceful shutdown: on SIGTERM stop accepting, let open streams and waits run for HORDE_DRAIN_S, then end
the rest with server_shutting_down. Their requests stay held on the Horde: a retry with the same
Idempotency-Key on another process attaches to them.

One `Drain` per process. The waiter counts itself in `waiters` and ends when `ending` is set; the request
observer counts HTTP requests in flight, so the last error events are written before the process exits.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from horde.config import Settings
    from horde.events.bus import LocalEventBus

log = logging.getLogger(__name__)
POLL_S = 0.05
#: After the drain, how long the ended streams and waits get to write their last event.
FLUSH_S = 5.0


class Drain:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.waiters = 0
        self.requests_in_flight = 0
        self.draining = False
        self.ending = False

    @contextlib.contextmanager
    def waiter(self) -> Iterator[None]:
        with self._lock:
            self.waiters += 1
        try:
            yield
        finally:
            with self._lock:
                self.waiters -= 1

    def request_started(self) -> None:
        with self._lock:
            self.requests_in_flight += 1

    def request_ended(self) -> None:
        with self._lock:
            self.requests_in_flight -= 1

    def run(self, bus: LocalEventBus, drain_s: float) -> None:
        """Block (a greenlet under gevent) until the open streams and waits ended, or end them at the deadline."""
        if self.draining:
            return
        self.draining = True
        log.info("draining: %d open streams and waits, up to %.0f s", self.waiters, drain_s)
        _wait_until(lambda: self.waiters == 0, drain_s)
        if self.waiters:
            log.info("drain over: ending %d streams and waits with server_shutting_down", self.waiters)
        self.ending = True  # also ends long-polling pops at once
        bus.wake_all()
        _wait_until(lambda: self.waiters == 0 and self.requests_in_flight == 0, FLUSH_S)

    def start(self, bus: LocalEventBus, drain_s: float) -> None:
        """`run` in a greenlet, for a signal handler (which must not block, nor start a thread under gevent)."""
        import gevent

        gevent.spawn(self.run, bus, drain_s)


def _wait_until(condition: Callable[[], bool], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition() and time.monotonic() < deadline:
        time.sleep(POLL_S)


DRAIN = Drain()


class Draining(Protocol):
    """What the drain reads of the Runtime (horde/runtime.py, a layer above): its bus and its HORDE_DRAIN_S."""

    settings: Settings
    bus: LocalEventBus


def chain_sigterm(runtime: Draining) -> None:
    """Under gunicorn: start the drain on SIGTERM, then let gunicorn's own handler stop accepting."""
    previous = signal.getsignal(signal.SIGTERM)

    def on_sigterm(signum, frame):
        DRAIN.start(runtime.bus, runtime.settings.drain_s)
        if callable(previous):
            previous(signum, frame)

    signal.signal(signal.SIGTERM, on_sigterm)
