"""The Redis event bus against a throwaway redis-server: absent at start, started, killed."""

from __future__ import annotations

import threading
import uuid

import pytest

from horde.events.bus import POLL_WITHOUT_EVENTS_S
from horde.events.redis_bus import RedisEventBus
from tests.support import redis_server
from tests.support.processes import wait_until
from tests.support.redis_server import RedisServer

DEADLINE_S = 30.0


@pytest.fixture
def redis():
    if not redis_server.available():
        pytest.skip("redis-server is not installed")
    server = RedisServer()
    yield server
    server.kill()


@pytest.fixture
def buses(redis):
    """Two buses with one prefix, as two server processes would have."""
    prefix = f"horde_test_{uuid.uuid4().hex[:12]}"
    pair = [RedisEventBus(redis.url, prefix), RedisEventBus(redis.url, prefix)]
    yield pair
    for bus in pair:
        bus.close()


def test_without_redis_waiters_poll_then_events_flow_once_it_starts_and_polling_returns_when_it_dies(redis, buses):
    here, there = buses
    subscription = here.subscribe("request:r1")
    assert here.status() == "unreachable" and here.poll_interval_s() == POLL_WITHOUT_EVENTS_S
    assert subscription.wait(DEADLINE_S), "with Redis down, a waiter is told to read the database"

    redis.start()
    wait_until(lambda: here.status() == there.status() == "ok", DEADLINE_S, "both buses to subscribe")
    assert here.poll_interval_s() is None
    subscription.wait(0)
    there.publish("request:r1")
    assert subscription.wait(DEADLINE_S), "an event published by one bus reaches the other through Redis"

    redis.kill()
    assert subscription.wait(DEADLINE_S), "losing Redis wakes every waiter"
    wait_until(lambda: here.status() == there.status() == "unreachable", DEADLINE_S, "both buses to notice")
    assert here.poll_interval_s() == POLL_WITHOUT_EVENTS_S
    local = there.subscribe("request:r2")
    there.publish("request:r2")
    assert local.wait(0), "without Redis a publish still reaches the waiters of its own process at once"


def test_with_redis_up_a_quiet_waiter_is_not_woken(redis, buses):
    here, _ = buses
    redis.start()
    wait_until(lambda: here.status() == "ok", DEADLINE_S, "the bus to subscribe")
    subscription = here.subscribe("request:quiet")
    assert not subscription.wait(POLL_WITHOUT_EVENTS_S * 1.5), "events are trusted: no polling while Redis is up"


class Poller:
    """A long-poll blocked in its wait on jobs:m (a pop with nothing to claim), in a thread of its own."""

    def __init__(self, bus, subscription=None):
        self.bus = bus
        self.subscription = subscription or bus.subscribe("jobs:m", single=True)
        self.subscription.mark_seen()
        self.woken = threading.Event()
        threading.Thread(target=self._wait, daemon=True).start()
        wait_until(lambda: self.subscription in self.bus._waiting.get("jobs:m", {}), DEADLINE_S, "the poller to wait")

    def _wait(self):
        if self.subscription.wait(DEADLINE_S):
            self.woken.set()

    def heard(self) -> bool:
        return self.woken.is_set() or self.subscription.pending

    def looked_and_found_nothing(self):
        """Woken, it looked at the queue and could not take the job."""
        assert self.woken.wait(DEADLINE_S)
        self.subscription.mark_seen()


def sent_before(publisher, listener) -> None:
    """Returns once `listener` has heard what `publisher` sent to Redis so far: one sender writes a process's
    publishes in order on one connection, and Redis delivers them to a subscriber in that order."""
    channel = f"request:{uuid.uuid4().hex}"
    with listener.subscribe(channel) as marker:
        publisher.publish(channel)
        assert marker.wait(DEADLINE_S), "the marker came through Redis"


@pytest.fixture
def connected(redis, buses):
    redis.start()
    wait_until(lambda: all(bus.status() == "ok" for bus in buses), DEADLINE_S, "both buses to subscribe")
    return buses


def test_an_announcement_that_a_poller_here_takes_wakes_no_poller_in_another_process(connected):
    here, there = connected
    ours, theirs = Poller(here), Poller(there)
    here.publish("jobs:m")
    assert ours.woken.wait(DEADLINE_S)
    sent_before(here, there)
    assert not theirs.heard(), "the other process's poller would only have found the job taken"


def test_with_no_poller_waiting_here_an_announcement_goes_to_the_other_processes(connected):
    here, there = connected
    theirs = [Poller(there), Poller(there)]
    here.publish("jobs:m")
    assert theirs[0].woken.wait(DEADLINE_S)
    assert not theirs[1].heard(), "each process wakes one poller, the one waiting longest"


def test_a_poller_that_cannot_take_a_job_only_it_heard_hands_it_to_the_other_processes_once(connected):
    here, there = connected
    ours = Poller(here)
    theirs = [Poller(there), Poller(there)]
    here.publish("jobs:m")
    ours.looked_and_found_nothing()
    assert ours.subscription.pass_on(), "no poller is left here: the other processes get the announcement"
    again = Poller(here, ours.subscription)
    assert theirs[0].woken.wait(DEADLINE_S)
    sent_before(here, here)
    assert not again.heard(), "a process skips the announcement it passed on: its pollers have all looked"
    assert not theirs[1].heard()

    theirs[0].looked_and_found_nothing()
    assert theirs[0].subscription.pass_on(), "passed on within the other process as before"
    assert theirs[1].woken.wait(DEADLINE_S)
    theirs[1].looked_and_found_nothing()
    assert not theirs[1].subscription.pass_on(), "every process heard it: the chain ends"
    sent_before(there, here)
    assert not again.heard()


def test_a_handover_reaches_the_listeners_here_at_once_and_the_other_processes_without_it(connected):
    """A submit's finish is handed to this process's waiters with the event, without the trip through Redis;
    the other processes hear the event alone, and this process does not hear it a second time."""
    here, there = connected
    ours, theirs = here.subscribe("request:handed"), there.subscribe("request:handed")
    finish = object()
    here.publish("request:handed", finish)
    assert ours.wait(0), "woken at once, before Redis relays anything"
    assert ours.take_handover() is finish and ours.take_handover() is None
    assert theirs.wait(DEADLINE_S), "the other process hears the event through Redis"
    assert theirs.take_handover() is None, "what was handed over stays in the process that handed it"
    sent_before(here, here)
    assert not ours.wait(0), "the process that handed it over skips the event's return from Redis"


class _Words:
    """A codec for the tests: carries a str, refuses anything else (a bare event)."""

    @staticmethod
    def encode(handover):
        return handover.encode() if isinstance(handover, str) else None

    @staticmethod
    def decode(data):
        if data.startswith(b"!"):
            raise ValueError("not a word")
        return data.decode()


@pytest.fixture
def carrying(redis):
    """Two connected buses that carry what their codec encodes (decision 0021)."""
    prefix = f"horde_test_{uuid.uuid4().hex[:12]}"
    pair = [RedisEventBus(redis.url, prefix, _Words()), RedisEventBus(redis.url, prefix, _Words())]
    redis.start()
    wait_until(lambda: all(bus.status() == "ok" for bus in pair), DEADLINE_S, "both buses to subscribe")
    yield pair
    for bus in pair:
        bus.close()


def test_a_handover_the_codec_encodes_reaches_the_other_processes_with_it(carrying):
    here, there = carrying
    ours, theirs = here.subscribe("request:carried"), there.subscribe("request:carried")
    here.publish("request:carried", "finished")
    assert ours.wait(0) and ours.take_handover() == "finished"
    assert theirs.wait(DEADLINE_S), "the other process hears the event through Redis"
    assert theirs.take_handover() == "finished", "with the handover, decoded there"
    sent_before(here, here)
    assert not ours.wait(0), "the process that handed it over still skips the event's return from Redis"


def test_a_handover_the_codec_refuses_or_that_does_not_decode_arrives_bare(carrying):
    """A bare event costs the listener a read of the database, never a wrong answer or a dead listener."""
    here, there = carrying
    theirs = there.subscribe("request:bare")
    here.publish("request:bare", object())  # the codec does not encode it
    assert theirs.wait(DEADLINE_S) and theirs.take_handover() is None
    here.publish("request:bare", "!garbled")  # encoded, but its decoding fails there
    assert theirs.wait(DEADLINE_S) and theirs.take_handover() is None
    here.publish("request:bare", "after")
    assert theirs.wait(DEADLINE_S) and theirs.take_handover() == "after", "the listener lives on"


def test_publish_now_returns_once_every_other_process_ran_its_callbacks(connected):
    """A change that must hold from the next request on: the publisher waits for the other process's callback
    (slow here on purpose), not only for Redis to take the event; its own callbacks run once, at once."""
    here, there = connected
    ran_there, ran_here = [], []
    slow_s = 0.3

    def slow_callback():
        threading.Event().wait(slow_s)
        ran_there.append(True)

    there.on("forget", slow_callback)
    here.on("forget", lambda: ran_here.append(True))
    for _ in range(3):
        before = len(ran_there)
        here.publish_now("forget")
        assert len(ran_there) == before + 1, "the other process's callback ran before publish_now returned"
    assert len(ran_here) == 3


def test_publish_now_without_an_answering_process_waits_a_bounded_time(connected, monkeypatch):
    from horde.events import redis_bus

    here, there = connected
    monkeypatch.setattr(redis_bus, "ACKNOWLEDGE_WAIT_S", 0.2)
    monkeypatch.setattr(there, "_acknowledge", lambda channel, data: None)  # a process that hears but never says so
    waited = threading.Event()
    worker = threading.Thread(target=lambda: (here.publish_now("forget"), waited.set()), daemon=True)
    worker.start()
    assert waited.wait(DEADLINE_S), "publish_now gives up after ACKNOWLEDGE_WAIT_S"
