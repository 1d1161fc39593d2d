"""The Redis event bus against a throwaway redis-server: absent at start, started, killed."""

from __future__ import annotations

import uuid

import pytest

from horde.events import POLL_WITHOUT_EVENTS_S
from horde.redis_events import RedisEventBus
from horde_testing import redis_server
from horde_testing.processes import wait_until
from horde_testing.redis_server import RedisServer

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
