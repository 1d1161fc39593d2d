"""Request events: a waiter hears that a request or the job queue changed.

Events carry no state; the state lives in the database and a woken waiter reads
it. In-process by default; over Redis pub/sub when HORDE_REDIS_URL is set, so a
waiter in one server process hears a submit handled by another
(horde/redis_events.py). While Redis cannot be reached, waiters read the
database every POLL_WITHOUT_EVENTS_S instead.

A subscriber subscribes *before* it reads the state, then waits: a publish that
lands between the read and the wait is not lost.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from horde.config import Settings

#: While Redis is unreachable, waiters and long-polls read the database this often instead.
POLL_WITHOUT_EVENTS_S = 1.0


def request_channel(request_id: str) -> str:
    return f"request:{request_id}"


def jobs_channel(model: str) -> str:
    """Where a job for `model` is announced: only the workers serving it wake up."""
    return f"jobs:{model}"


def announce_jobs(bus: LocalEventBus, models: Iterable[str]) -> None:
    for model in dict.fromkeys(models):
        bus.publish(jobs_channel(model))


class Subscription:
    def __init__(self, bus: LocalEventBus, channels: Iterable[str]):
        self._bus = bus
        self.channels = tuple(channels)
        self._event = threading.Event()
        self._woken_at = time.monotonic()

    def notify(self) -> None:
        self._event.set()

    def wait(self, timeout: float | None) -> bool:
        """True when an event arrived since the last wait (or during this one).

        While the bus cannot hear other processes, it is also True once every POLL_WITHOUT_EVENTS_S,
        so that the waiter reads the database instead of an event.
        """
        poll_s = self._bus.poll_interval_s()
        if poll_s is None:
            fired = self._event.wait(timeout)
        else:
            due_s = max(0.0, self._woken_at + poll_s - time.monotonic())
            fired = self._event.wait(due_s if timeout is None else min(timeout, due_s))
            fired = fired or time.monotonic() >= self._woken_at + poll_s
        self._event.clear()
        if fired:
            self._woken_at = time.monotonic()
        return fired

    def close(self) -> None:
        self._bus._unsubscribe(self)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class LocalEventBus:
    def __init__(self):
        self._lock = threading.Lock()
        self._subscribers: dict[str, set[Subscription]] = {}

    def subscribe(self, *channels: str) -> Subscription:
        subscription = Subscription(self, channels)
        with self._lock:
            for channel in channels:
                self._subscribers.setdefault(channel, set()).add(subscription)
        return subscription

    def _unsubscribe(self, subscription: Subscription) -> None:
        with self._lock:
            for channel in subscription.channels:
                subscribers = self._subscribers.get(channel)
                if subscribers:
                    subscribers.discard(subscription)
                    if not subscribers:
                        del self._subscribers[channel]

    def publish(self, channel: str) -> None:
        self._dispatch(channel)

    def _dispatch(self, channel: str) -> None:
        with self._lock:
            subscribers = list(self._subscribers.get(channel, ()))
        for subscription in subscribers:
            subscription.notify()

    def wake_all(self) -> None:
        """Every waiter reads the database now: events may have been lost, or the database itself."""
        with self._lock:
            subscribers = {subscription for group in self._subscribers.values() for subscription in group}
        for subscription in subscribers:
            subscription.notify()

    def poll_interval_s(self) -> float | None:
        """None while events reach this process; else how often waiters read the database instead."""
        return None

    def status(self) -> str:
        """What the readiness probe says of Redis: here none is configured (in-process events only)."""
        return "not configured"

    def close(self) -> None:
        pass


def make_event_bus(settings: Settings) -> LocalEventBus:
    if settings.redis_url:
        from horde.redis_events import RedisEventBus

        return RedisEventBus(settings.redis_url, settings.redis_prefix)
    return LocalEventBus()
