"""Request events: a waiter hears that a request or the job queue changed.

Events carry no state; the state lives in the database and a woken waiter reads
it. One exception: a publisher may hand its listeners what it has just committed
(a submit, the request it finished: horde/chat/finish.py), so that they need not
read it back; over Redis it travels with the event when a HandoverCodec encodes it.
In-process by default; over Redis pub/sub when HORDE_REDIS_URL is set, so a
waiter in one server process hears a submit handled by another
(horde/events/redis_bus.py). While Redis cannot be reached, waiters read the
database every POLL_WITHOUT_EVENTS_S instead; without Redis, while other processes
share the database, every HORDE_EVENTS_POLL_S (horde/presence/hearing.py).

A subscriber subscribes *before* it reads the state, then waits: a publish that
lands between the read and the wait is not lost.

A request has two channels: its changes of state (request_channel) and its job's
start and progress (progress_channel), which only streams listen to; a JSON answer
needs the end alone (docs/decisions/0012-client-path-round-trips.md).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from typing import Protocol

from horde.cooperative import pass_turn

#: While Redis is unreachable, waiters and long-polls read the database this often instead.
POLL_WITHOUT_EVENTS_S = 1.0


class HandoverCodec(Protocol):
    """Carries a handover to the other processes with its event (horde/events/redis_bus.py)."""

    def encode(self, handover: object) -> bytes | None:
        """The handover as bytes, or None to send the event bare (the listeners there read instead)."""

    def decode(self, data: bytes) -> object:
        """What `encode` wrote; raises (ValueError, KeyError, TypeError) on anything else."""


def request_channel(request_id: str) -> str:
    """A request changed state: it ended, went back to the queue, or was cancelled."""
    return f"request:{request_id}"


def progress_channel(request_id: str) -> str:
    """A request's job was taken or posted progress. Only streams listen: a JSON answer waits for the end,
    and reading the row on every progress would cost it a database read for nothing."""
    return f"progress:{request_id}"


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
        #: Set by notify, cleared by wait. An Event (gevent's under monkey patching) rather than a Condition: a
        #: wait allocates no lock and sits a few frames higher, and thousands of waiting streams each hold one.
        self._notified = threading.Event()
        #: Per channel, the announcement count when this poller last looked at the queue.
        self.seen: dict[str, int] = {}
        self._woken_at = time.monotonic()
        #: Whether an announcement that no other process heard is pending for this poller (see heard_alone).
        self._alone_pending = False
        #: Whether the announcement that ended the last wait reached this process only: a poller that cannot
        #: use it and finds no other here to pass it to hands it to the other processes (horde/events/redis_bus.py).
        self.heard_alone = False
        #: What a publisher in this process handed over with its event, until take_handover.
        self._handover: object | None = None

    def notify(self, *, alone: bool = False, handover: object | None = None) -> None:
        if alone:
            self._alone_pending = True
        if handover is not None:
            self._handover = handover
        self._notified.set()

    def take_handover(self) -> object | None:
        """What a publisher in this process handed over with an event since the last take (None: nothing)."""
        handover, self._handover = self._handover, None
        return handover

    @property
    def pending(self) -> bool:
        return self._notified.is_set()

    def wait(self, timeout: float | None) -> bool:
        """True when an event arrived since the last wait (or during this one).

        While the bus cannot hear other processes, it is also True once every POLL_WITHOUT_EVENTS_S,
        so that the waiter reads the database instead of an event.
        """
        poll_s = self._bus.poll_interval_s()
        if poll_s is not None:
            due_s = max(0.0, self._woken_at + poll_s - time.monotonic())
            timeout = due_s if timeout is None else min(timeout, due_s)
        if self.single:
            self._bus._start_waiting(self)
        try:
            # A notify between the wait and the clear merges with the one that woke it: either way the caller
            # reads the state after this returns, so it sees both changes.
            fired = self._notified.wait(timeout)
            if fired:
                self._notified.clear()
            self.heard_alone, self._alone_pending = fired and self._alone_pending, False
        finally:
            if self.single:
                self._bus._stop_waiting(self)
        if poll_s is not None and time.monotonic() >= self._woken_at + poll_s:
            fired = True
        if fired:
            self._woken_at = time.monotonic()
        return fired

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
    def __init__(self, poll_s: float | None = None):
        """`poll_s`: how often waiters read the database instead of an event, while other processes share the
        database without Redis (HORDE_EVENTS_POLL_S, set by horde/presence/hearing.py); None: events alone wake
        them."""
        self._poll_s = poll_s
        self._lock = threading.Lock()
        self._subscribers: dict[str, set[Subscription]] = {}
        #: Pollers blocked in wait(), per channel, oldest first (dict keys keep insertion order).
        self._waiting: dict[str, dict[Subscription, None]] = {}
        self._announced: dict[str, int] = {}
        #: Callbacks run on every event of their channel in this process, for the life of the bus (on()).
        self._callbacks: dict[str, list[Callable[[], None]]] = {}

    def on(self, channel: str, callback: Callable[[], None]) -> None:
        """Run `callback` on every event of `channel` that reaches this process, its own included: for what a
        process keeps for all its requests (the identity cache), rather than for one waiter."""
        with self._lock:
            self._callbacks.setdefault(channel, []).append(callback)

    def subscribe(self, *channels: str, single: bool = False) -> Subscription:
        subscription = Subscription(self, channels, single)
        with self._lock:
            for channel in channels:
                self._subscribers.setdefault(channel, set()).add(subscription)
        return subscription

    def _unsubscribe(self, subscription: Subscription) -> None:
        """A poller that leaves with an announcement it never waited for (it was chosen while busy in its own
        pop, then returned) hands it to another, as pass_on does: the job is not left to a recheck."""
        with self._lock:
            for channel in subscription.channels:
                subscribers = self._subscribers.get(channel)
                if subscribers:
                    subscribers.discard(subscription)
                    if not subscribers:
                        del self._subscribers[channel]
                        self._announced.pop(channel, None)
                self._waiting.get(channel, {}).pop(subscription, None)
            unheard = subscription.single and subscription.pending
            chosen = [self._pick(channel) for channel in subscription.channels] if unheard else []
        for other in dict.fromkeys(chosen):
            if other is not None:
                other.notify(alone=subscription._alone_pending)

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
            if (
                subscription.single
                and subscription is not exclude
                and not subscription.pending
                and subscription.seen.get(channel, 0) < latest
            ):
                return subscription
        return None

    def _pass_on(self, subscription: Subscription) -> bool:
        with self._lock:
            chosen = [self._pick(channel, exclude=subscription) for channel in subscription.channels]
        for other in dict.fromkeys(chosen):
            if other is not None:
                other.notify(alone=subscription.heard_alone)
        return any(chosen)

    def publish(self, channel: str, handover: object | None = None) -> None:
        """`handover`: what the publisher has just committed, for the listeners in this process (never a poller)."""
        self._dispatch(channel, handover)

    def publish_now(self, channel: str) -> None:
        """Publish and return once every process that hears the bus has the event: here, at once."""
        self._dispatch(channel)

    def wake_all(self) -> None:
        """Wake every local subscriber: a shutdown, a lost database or lost events; each looks at why it waits."""
        with self._lock:
            subscribers = {subscription for group in self._subscribers.values() for subscription in group}
        for subscription in subscribers:
            subscription.notify()

    def _dispatch(self, channel: str, handover: object | None = None) -> None:
        for callback in self._callbacks.get(channel, ()):
            callback()
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
            subscription.notify(handover=None if subscription.single else handover)
        if listeners:
            pass_turn()

    def poll_interval_s(self) -> float | None:
        """None while events reach this process; else how often waiters read the database instead."""
        return self._poll_s

    def poll_while_shared(self, poll_s: float | None) -> None:
        """Other processes share the database without Redis (`poll_s`: how often to read it), or no longer (None).
        When polling starts, every waiter wakes to read once and then waits at most `poll_s`."""
        started = poll_s is not None and self._poll_s is None
        self._poll_s = poll_s
        if started:
            self.wake_all()

    def hears_other_processes(self) -> bool:
        """Whether the other processes' events reach this one (through Redis): no need to read the database for
        them. In-process events reach this process only."""
        return False

    def status(self) -> str:
        """What the readiness probe says of Redis: here none is configured (in-process events only)."""
        return "not configured"

    def close(self) -> None:
        pass
