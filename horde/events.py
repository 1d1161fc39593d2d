"""Request events: a waiter hears that a request or the job queue changed.

Events carry no state; the state lives in the database and a woken waiter reads
it. In-process by default; over Redis pub/sub when HORDE_REDIS_URL is set, so a
waiter in one server process hears a submit handled by another.

A subscriber subscribes *before* it reads the state, then waits: a publish that
lands between the read and the wait is not lost.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from horde.config import Settings

log = logging.getLogger(__name__)

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

    def notify(self) -> None:
        self._event.set()

    def wait(self, timeout: float | None) -> bool:
        """True when an event arrived since the last wait (or during this one)."""
        fired = self._event.wait(timeout)
        self._event.clear()
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

    def close(self) -> None:
        pass


class RedisEventBus(LocalEventBus):
    """Publishes through Redis; one listener per process dispatches to local subscribers."""

    def __init__(self, url: str, prefix: str):
        super().__init__()
        import redis

        self._prefix = f"{prefix}:events:"
        self._redis = redis.Redis.from_url(url)
        self._pubsub = self._redis.pubsub(ignore_subscribe_messages=True)
        self._pubsub.psubscribe(self._prefix + "*")
        self._closed = threading.Event()
        self._listener = threading.Thread(target=self._listen, name="horde-events", daemon=True)
        self._listener.start()

    def publish(self, channel: str) -> None:
        try:
            self._redis.publish(self._prefix + channel, b"")
        except Exception:  # a lost event costs latency only: waiters re-read on their tick
            log.exception("publishing %s to Redis failed; dispatching locally", channel)
            self._dispatch(channel)

    def _listen(self) -> None:
        prefix_length = len(self._prefix)
        while not self._closed.is_set():
            try:
                message = self._pubsub.get_message(timeout=1.0)
            except Exception:
                if self._closed.is_set():
                    return
                log.exception("Redis event listener failed; reconnecting")
                self._closed.wait(0.5)
                continue
            if message and message.get("type") == "pmessage":
                channel = message["channel"]
                if isinstance(channel, bytes):
                    channel = channel.decode()
                self._dispatch(channel[prefix_length:])

    def close(self) -> None:
        self._closed.set()
        try:
            self._pubsub.close()
            self._redis.close()
        except Exception:
            pass


def make_event_bus(settings: Settings) -> LocalEventBus:
    if settings.redis_url:
        return RedisEventBus(settings.redis_url, settings.redis_prefix)
    return LocalEventBus()
