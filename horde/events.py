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
    """One listener on some channels. `single`: a job poller; an announcement on a channel wakes one of
    them (the longest waiting), not all, and a poller that could not use the job passes it on."""

    def __init__(self, bus: LocalEventBus, channels: Iterable[str], single: bool = False):
        self._bus = bus
        self.channels = tuple(channels)
        self.single = single
        self._ready = threading.Condition(threading.Lock())
        self._pending = False
        #: Per channel, the announcement count when this poller last looked at the queue.
        self.seen: dict[str, int] = {}

    def notify(self) -> None:
        with self._ready:
            self._pending = True
            self._ready.notify()

    @property
    def pending(self) -> bool:
        return self._pending

    def wait(self, timeout: float | None) -> bool:
        """True when an event arrived since the last wait (or during this one)."""
        if self.single:
            self._bus._start_waiting(self)
        try:
            with self._ready:
                if not self._pending:
                    self._ready.wait(timeout)
                fired, self._pending = self._pending, False
                return fired
        finally:
            if self.single:
                self._bus._stop_waiting(self)

    def mark_seen(self) -> None:
        """Call before looking at the queue: every announcement so far is then accounted for."""
        self._bus._mark_seen(self)

    def pass_on(self) -> bool:
        """The announcement that woke this poller was of no use to it: wake another that has not seen it."""
        return self._bus._pass_on(self)

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
        #: Pollers blocked in wait(), per channel, oldest first (dict keys keep insertion order).
        self._waiting: dict[str, dict[Subscription, None]] = {}
        self._announced: dict[str, int] = {}

    def subscribe(self, *channels: str, single: bool = False) -> Subscription:
        subscription = Subscription(self, channels, single)
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
                        self._announced.pop(channel, None)
                self._waiting.get(channel, {}).pop(subscription, None)

    def _start_waiting(self, subscription: Subscription) -> None:
        with self._lock:
            for channel in subscription.channels:
                self._waiting.setdefault(channel, {})[subscription] = None

    def _stop_waiting(self, subscription: Subscription) -> None:
        with self._lock:
            self._forget_waiting(subscription)

    def _forget_waiting(self, subscription: Subscription) -> None:
        for channel in subscription.channels:
            waiting = self._waiting.get(channel)
            if waiting is not None:
                waiting.pop(subscription, None)
                if not waiting:
                    del self._waiting[channel]

    def _mark_seen(self, subscription: Subscription) -> None:
        with self._lock:
            subscription.seen = {channel: self._announced.get(channel, 0) for channel in subscription.channels}

    def _pick(self, channel: str, exclude=None) -> Subscription | None:
        """The poller to wake for `channel` (lock held): the longest waiting one that has not seen the
        latest announcement, else a busy one that will look again when it is done."""
        latest = self._announced.get(channel, 0)
        for subscription in self._waiting.get(channel, ()):
            if subscription is not exclude and subscription.seen.get(channel, 0) < latest:
                self._forget_waiting(subscription)
                return subscription
        for subscription in self._subscribers.get(channel, ()):
            if (subscription.single and subscription is not exclude and not subscription.pending
                    and subscription.seen.get(channel, 0) < latest):
                return subscription
        return None

    def _pass_on(self, subscription: Subscription) -> bool:
        with self._lock:
            chosen = [self._pick(channel, exclude=subscription) for channel in subscription.channels]
        for other in dict.fromkeys(chosen):
            if other is not None:
                other.notify()
        return any(chosen)

    def publish(self, channel: str) -> None:
        self._dispatch(channel)

    def wake_all(self) -> None:
        """Wake every local subscriber (a shutdown: each looks at why it waits)."""
        with self._lock:
            subscribers = {subscription for group in self._subscribers.values() for subscription in group}
        for subscription in subscribers:
            subscription.notify()

    def _dispatch(self, channel: str) -> None:
        with self._lock:
            subscribers = self._subscribers.get(channel)
            if not subscribers:
                return
            listeners = [subscription for subscription in subscribers if not subscription.single]
            if len(listeners) < len(subscribers):
                self._announced[channel] = self._announced.get(channel, 0) + 1
                chosen = self._pick(channel)
                if chosen is not None:
                    listeners.append(chosen)
        for subscription in listeners:
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
