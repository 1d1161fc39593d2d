"""Events over Redis pub/sub, so that a waiter in one process hears a change made in another.

Redis only speeds up wake-ups; the database is the source of truth. One listener
thread per process holds a pattern subscription and dispatches what it hears to
the local subscribers. While it is not subscribed (Redis down at start, or lost
later) waiters and long-polls read the database every POLL_WITHOUT_EVENTS_S,
publishes are dispatched locally as well, and the listener reconnects every
RECONNECT_S until Redis answers again. No restart is needed either way.

A job announcement wakes one long-polling pop on the whole Horde where it can: a
pop waiting in the announcing process takes it without Redis, and only when none
waits there does it go to every process (each wakes its longest waiting pop). A
pop woken by such a local announcement that cannot take the job, with no other
pop here to pass it to, hands it to the other processes once.

An event published with a handover (a submit's finish) reaches the listeners here
at once, with it, and the other processes through Redis: with it as well when the
bus's HandoverCodec encodes it (decision 0021), else bare.

A publish does not wait for Redis: it joins an outbox that one sender per process
writes as a pipeline, so a handler never waits a round trip for it, and the
publishes of a busy moment share one write and one read (about a tenth of the CPU
of one PUBLISH each, measured with redis-py).

`publish_now` is the exception, for a change that must hold in every process from the
next request on (a replaced key): it waits until every listening process has run its
callbacks for the event and said so on ACKNOWLEDGED_CHANNEL. Having the event in its
connection is not enough: a process may serve a request that arrived after it first.
"""

from __future__ import annotations

import collections
import contextlib
import logging
import threading
import uuid

import redis
from redis.backoff import NoBackoff
from redis.client import PubSub
from redis.retry import Retry

from horde.cooperative import pass_turn
from horde.events.bus import POLL_WITHOUT_EVENTS_S, HandoverCodec, LocalEventBus, Subscription

log = logging.getLogger(__name__)

#: A refused or silent Redis costs a publish at most this long.
REDIS_CONNECT_TIMEOUT_S = 1.0
REDIS_IO_TIMEOUT_S = 2.0
#: How long the listener blocks for a message before it looks at `closed` again.
LISTEN_TICK_S = 1.0
RECONNECT_S = 0.5
#: How long publish_now waits for every listening process to acknowledge its event; past it, it logs and returns.
ACKNOWLEDGE_WAIT_S = 2.0
#: Where listeners acknowledge an event that asks for it (its data: ASKS_ACKNOWLEDGEMENT, the origin's mark, a token).
ACKNOWLEDGED_CHANNEL = "acknowledged"
ASKS_ACKNOWLEDGEMENT = b"asks-acknowledgement:"
#: At most this many publishes go in one pipeline; a longer outbox is sent in several.
PUBLISHES_PER_PIPELINE = 256
#: Between a message's origin mark and the handover it carries.
HANDOVER_SEPARATOR = b"\n"


class RedisEventBus(LocalEventBus):
    """Publishes through Redis; one listener per process dispatches to local subscribers."""

    def __init__(self, url: str, prefix: str, handover_codec: HandoverCodec | None = None):
        super().__init__()
        self._codec = handover_codec
        self._prefix = f"{prefix}:events:"
        # No retries inside redis-py: a failed publish falls back at once, the listener retries on its own.
        self._redis = redis.Redis.from_url(
            url,
            socket_connect_timeout=REDIS_CONNECT_TIMEOUT_S,
            socket_timeout=REDIS_IO_TIMEOUT_S,
            socket_keepalive=True,
            retry=Retry(NoBackoff(), 0),
        )
        self._subscribed: bool | None = None  # unknown until the listener's first attempt
        self._pubsub: PubSub | None = None  # the listener's, closed by close()
        self._closed = threading.Event()
        #: Marks what this process sends to the others only, so that its listener skips it: the announcements it
        #: passes on, and the events whose listeners here it has woken already (a handover, which may follow the
        #: mark after HANDOVER_SEPARATOR). Every process's mark has the same length and no separator in it.
        self._others_only_mark = f"others-only-from:{uuid.uuid4().hex}".encode()
        #: Channels to publish, each with whether this process counts on hearing it back from Redis (else a
        #: failed send drops it) and the message's data.
        self._outbox: collections.deque[tuple[str, bool, bytes]] = collections.deque()
        self._outbox_filled = threading.Event()
        #: publish_now's events still waiting for their acknowledgements: token -> acknowledgements heard.
        self._acknowledgements: dict[bytes, int] = {}
        self._acknowledgements_changed = threading.Condition()
        self._listener = threading.Thread(target=self._listen, name="horde-events", daemon=True)
        self._listener.start()
        self._sender = threading.Thread(target=self._send, name="horde-events-sender", daemon=True)
        self._sender.start()

    def poll_interval_s(self) -> float | None:
        return None if self._subscribed is True else POLL_WITHOUT_EVENTS_S

    def hears_other_processes(self) -> bool:
        return True

    def status(self) -> str:
        return "ok" if self._subscribed is True else "unreachable"

    def publish(self, channel: str, handover: object | None = None) -> None:
        """To Redis for every process, without waiting for it; also locally at once while this process's
        listener cannot hear Redis (a failed send dispatches locally what it could not deliver). A job
        announcement that a pop waiting here takes stays here. An event with a `handover` reaches the
        listeners here at once, with it, and the other processes through Redis, with it when the codec
        encodes it."""
        heard_back = self._subscribed is True
        if handover is not None:
            self._dispatch(channel, handover)
            carried = self._codec.encode(handover) if self._codec is not None else None
            data = self._others_only_mark if carried is None else self._others_only_mark + HANDOVER_SEPARATOR + carried
            self._outbox.append((channel, False, data))
            self._outbox_filled.set()
            return
        if heard_back and self._wake_a_poller_here(channel):
            return
        if not heard_back:
            self._dispatch(channel)
        self._outbox.append((channel, heard_back, b""))
        self._outbox_filled.set()

    def publish_now(self, channel: str) -> None:
        """Dispatched here at once, then published to Redis; returns once every process listening on Redis has run
        its callbacks for the event (each acknowledges it), so the event holds everywhere before any request the
        caller's answer may lead to. A process that does not acknowledge within ACKNOWLEDGE_WAIT_S, or Redis
        unreachable (the other processes' listeners are cut off too, and their waiters poll): logged."""
        self._dispatch(channel)
        token = uuid.uuid4().hex.encode()
        with self._acknowledgements_changed:
            self._acknowledgements[token] = 0
        try:
            asked = ASKS_ACKNOWLEDGEMENT + self._others_only_mark + token
            listening = int(self._redis.publish(self._prefix + channel, asked))  # this process's listener included
            with self._acknowledgements_changed:
                heard = self._acknowledgements_changed.wait_for(
                    lambda: self._acknowledgements[token] >= listening, ACKNOWLEDGE_WAIT_S
                )
            if not heard:
                log.warning("%s: not every process acknowledged within %s s", channel, ACKNOWLEDGE_WAIT_S)
        except (redis.RedisError, OSError) as exc:
            log.warning("publishing %s to Redis failed (%s): other processes hear it late", channel, exc)
        finally:
            with self._acknowledgements_changed:
                self._acknowledgements.pop(token, None)

    def _acknowledge(self, channel: str, data: bytes) -> None:
        """Run the callbacks of an event that asks for acknowledgement (its origin ran them already), then say so."""
        origin_and_token = data[len(ASKS_ACKNOWLEDGEMENT) :]
        mark_length = len(self._others_only_mark)
        if origin_and_token[:mark_length] != self._others_only_mark:
            self._dispatch(channel)
        try:
            self._redis.publish(self._prefix + ACKNOWLEDGED_CHANNEL, origin_and_token[mark_length:])
        except (redis.RedisError, OSError) as exc:
            log.warning("acknowledging %s failed (%s)", channel, exc)

    def _count_acknowledgement(self, token: bytes) -> None:
        with self._acknowledgements_changed:
            if token in self._acknowledgements:
                self._acknowledgements[token] += 1
                self._acknowledgements_changed.notify_all()

    def _wake_a_poller_here(self, channel: str) -> bool:
        """Wake this process's longest waiting poller of `channel`, if one waits: a second process's poller
        woken by the same announcement would only look at the queue for nothing."""
        with self._lock:
            if not self._waiting.get(channel):
                return False
            self._announced[channel] = self._announced.get(channel, 0) + 1
            chosen = self._pick(channel)  # a waiting poller: each has seen less than the count just raised
        if chosen is None:
            return False
        chosen.notify(alone=True)
        pass_turn()
        return True

    def _pass_on(self, subscription: Subscription) -> bool:
        """To another poller here; when none is left and no other process heard the announcement, to every
        other process, once (this process's listener skips it: its pollers have all looked)."""
        if super()._pass_on(subscription):
            return True
        if not subscription.heard_alone or self._subscribed is not True:
            return False
        subscription.heard_alone = False
        for channel in subscription.channels:
            self._outbox.append((channel, False, self._others_only_mark))
        self._outbox_filled.set()
        return True

    def _send(self) -> None:
        """The sender: writes the outbox to Redis in pipelines until the bus closes, then once more."""
        while True:
            self._outbox_filled.wait()
            self._outbox_filled.clear()
            while self._outbox:
                self._send_some()
            if self._closed.is_set():
                return

    def _send_some(self) -> None:
        batch: list[tuple[str, bool, bytes]] = []
        while self._outbox and len(batch) < PUBLISHES_PER_PIPELINE:
            batch.append(self._outbox.popleft())
        pipeline = self._redis.pipeline(transaction=False)
        for channel, _, data in batch:
            pipeline.publish(self._prefix + channel, data)
        try:
            pipeline.execute()
        except Exception as exc:  # the sender must outlive any failure; what it could not send stays local
            if not isinstance(exc, (redis.RedisError, OSError)):
                log.exception("publishing to Redis failed")
            log.debug("publishing %d events to Redis failed (%s); dispatching locally", len(batch), exc)
            for channel, heard_back, _ in batch:
                if heard_back:
                    self._dispatch(channel)

    def _listen(self) -> None:
        while not self._closed.is_set():
            self._pubsub = pubsub = self._redis.pubsub()
            try:
                pubsub.psubscribe(self._prefix + "*")
                self._relay(pubsub)
            except Exception as exc:  # the listener must outlive any failure: it only costs latency
                if self._closed.is_set():
                    return  # close() pulled the connection from under the listener
                if not isinstance(exc, (redis.RedisError, OSError)):
                    log.exception("the Redis event listener failed; reconnecting")
                self._set_subscribed(False, f"{exc.__class__.__name__}: {exc}")
            finally:
                with contextlib.suppress(Exception):
                    pubsub.close()
            self._closed.wait(RECONNECT_S)

    def _relay(self, pubsub) -> None:
        prefix_length = len(self._prefix)
        while not self._closed.is_set():
            message = pubsub.get_message(timeout=LISTEN_TICK_S)
            if not message:
                continue
            if message.get("type") == "psubscribe":
                self._set_subscribed(True)
            elif message.get("type") == "pmessage":
                data = message.get("data", b"")
                channel = message["channel"]
                if isinstance(channel, bytes):
                    channel = channel.decode()
                channel = channel[prefix_length:]
                if channel == ACKNOWLEDGED_CHANNEL:
                    self._count_acknowledgement(data)
                    continue
                if data.startswith(ASKS_ACKNOWLEDGEMENT):
                    self._acknowledge(channel, data)
                    continue
                if data.startswith(self._others_only_mark):
                    continue
                # A handover is decoded only where someone here listens to its channel.
                self._dispatch(channel, self._carried(data) if self._subscribers.get(channel) else None)

    def _carried(self, data: bytes) -> object | None:
        """The handover another process sent after its mark, or None (a bare event, or one that does not
        decode: its listeners read the database instead)."""
        _, separator, carried = data.partition(HANDOVER_SEPARATOR)
        if not separator or self._codec is None:
            return None
        try:
            return self._codec.decode(carried)
        except (ValueError, KeyError, TypeError):
            log.warning("an event's handover from another process did not decode; its listeners read instead")
            return None

    def _set_subscribed(self, subscribed: bool, why: str = "") -> None:
        """On every change, wake every waiter: it re-reads what events it may have missed."""
        if subscribed == self._subscribed or self._closed.is_set():
            return
        self._subscribed = subscribed
        if subscribed:
            log.info("Redis events connected")
        else:
            log.warning(
                "Redis is unreachable (%s); waiters read the database every %s s until it returns",
                why,
                POLL_WITHOUT_EVENTS_S,
            )
        self.wake_all()

    def close(self) -> None:
        self._closed.set()
        self._outbox_filled.set()
        self._sender.join(REDIS_IO_TIMEOUT_S)  # what was published before close still goes out
        with contextlib.suppress(Exception):
            if self._pubsub is not None:
                self._pubsub.close()
        with contextlib.suppress(Exception):
            self._redis.close()
