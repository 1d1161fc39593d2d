"""Real servers say at start how they hear each other, and servers that share a database without Redis hear each
other by reading it, with no setting: a reply a worker submits to one server reaches the client waiting on another.
(How soon is bench/load.py --sqlite-processes 2's figure; tests/integration/presence/ holds the mechanism.)"""

from __future__ import annotations

import pytest

from tests.support.databases import redis_url
from tests.support.harness import Harness, unique_model
from tests.support.processes import wait_until

pytestmark = pytest.mark.e2e
SHARING = "events: 2 processes share this database without Redis: waiters and long-polling pops read it every 1 s"
ALONE = "events: one process alone on this database, without Redis"
THROUGH_REDIS = "events: through Redis: every process hears the others' events at once"


def test_two_servers_on_one_database_without_redis_read_it_to_hear_each_other(tmp_path):
    harness = Harness(f"sqlite:///{tmp_path / 'horde.db'}", servers=2)  # the default HORDE_EVENTS_POLL_S
    try:
        first, second = harness.servers
        wait_until(lambda: all(SHARING in server.output() for server in harness.servers), what="both to say so")
        assert ALONE in first.output()  # it started first, then saw the second
        model = unique_model("hearing")
        harness.worker([model], server=second)
        client = harness.openai(harness.user(kudos=100), server=first, timeout=60)
        reply = client.chat.completions.create(model=model, messages=[{"role": "user", "content": "across"}])
        assert reply.choices[0].message.content == "You wrote: across"
    finally:
        harness.close()


def test_a_server_with_redis_says_it_hears_the_others_through_it(tmp_path):
    if not redis_url():
        pytest.skip("Redis: HORDE_TEST_REDIS_URL")
    settings = {"HORDE_REDIS_URL": redis_url(), "HORDE_REDIS_PREFIX": f"horde_test_{tmp_path.name}"}
    harness = Harness(f"sqlite:///{tmp_path / 'horde.db'}", settings)
    try:
        wait_until(lambda: THROUGH_REDIS in harness.server.output(), what="the server to say so")
        assert "events: one process alone" not in harness.server.output()
    finally:
        harness.close()
