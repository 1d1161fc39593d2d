"""A publish does not wait for Redis, and publishes made while one is on its way share the next pipeline.

Against a small RESP server of the test's own that answers PUBLISH only when the test lets it: a real
Redis answers too fast for a test to see whether a publish waited for it.
"""

from __future__ import annotations

import socket
import threading
import uuid

import pytest

from horde.events.redis_bus import RedisEventBus
from tests.support.processes import free_port, wait_until

DEADLINE_S = 30.0


class HeldAnswersRedis:
    """Speaks enough RESP3 for RedisEventBus. Answers to PUBLISH wait until `release(n)` allows n more,
    and each release is spent only once `n` publishes are waiting: a group answered together."""

    def __init__(self):
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.published: list[str] = []
        self._unanswered: list[socket.socket] = []
        self._groups: list[int] = []
        self._lock = threading.Condition()
        self._closed = False
        self._listening = socket.create_server(("127.0.0.1", self.port))
        threading.Thread(target=self._accept, daemon=True).start()

    def release(self, group: int) -> None:
        with self._lock:
            self._groups.append(group)
            self._answer_ready_groups()

    def close(self) -> None:
        self._closed = True
        self._listening.close()

    def _accept(self) -> None:
        while not self._closed:
            try:
                connection, _ = self._listening.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(connection,), daemon=True).start()

    def _serve(self, connection: socket.socket) -> None:
        reader = connection.makefile("rb")
        try:
            while True:
                command = _read_command(reader)
                if command is None:
                    return
                self._handle(connection, command)
        except OSError:
            return

    def _handle(self, connection: socket.socket, command: list[bytes]) -> None:
        name = command[0].upper()
        if name == b"HELLO":  # redis-py speaks RESP3 when the server says it can
            connection.sendall(b"%1\r\n$5\r\nproto\r\n:3\r\n")
        elif name == b"PSUBSCRIBE":
            pattern = command[1]
            connection.sendall(b">3\r\n$10\r\npsubscribe\r\n$%d\r\n%s\r\n:1\r\n" % (len(pattern), pattern))
        elif name == b"PUBLISH":
            with self._lock:
                self.published.append(command[1].decode().rsplit(":events:", 1)[1])
                self._unanswered.append(connection)
                self._answer_ready_groups()
        else:
            connection.sendall(b"+OK\r\n")

    def _answer_ready_groups(self) -> None:
        while self._groups and len(self._unanswered) >= self._groups[0]:
            group = self._groups.pop(0)
            answered, self._unanswered = self._unanswered[:group], self._unanswered[group:]
            for connection in answered:
                connection.sendall(b":0\r\n")


def _read_command(reader) -> list[bytes] | None:
    header = reader.readline()
    if not header:
        return None
    count = int(header[1:])
    parts = []
    for _ in range(count):
        length = int(reader.readline()[1:])
        parts.append(reader.read(length + 2)[:-2])
    return parts


@pytest.fixture
def held_redis():
    server = HeldAnswersRedis()
    yield server
    server.close()


def test_a_publish_returns_before_redis_answers_and_later_ones_share_one_pipeline(held_redis):
    bus = RedisEventBus(held_redis.url, f"horde_test_{uuid.uuid4().hex[:12]}")
    try:
        wait_until(lambda: bus.status() == "ok", DEADLINE_S, "the bus to subscribe")
        here = bus.subscribe("request:first", "request:b", "request:c", "request:d")

        bus.publish("request:first")
        wait_until(lambda: held_redis.published == ["request:first"], DEADLINE_S, "the first publish to arrive")
        assert not here.pending, "a publish Redis has not answered yet is not dispatched locally"

        for channel in ("request:b", "request:c", "request:d"):
            bus.publish(channel)  # the sender still waits for the first answer: these queue up
        held_redis.release(1)
        held_redis.release(3)  # answered only once all three are in: one pipeline, not three round trips
        wait_until(lambda: len(held_redis.published) == 4, DEADLINE_S, "the three queued publishes to arrive")
        assert held_redis.published[1:] == ["request:b", "request:c", "request:d"]

        bus.publish("request:after")  # the sender takes it only after the group's answers are read
        held_redis.release(1)
        wait_until(lambda: held_redis.published[-1:] == ["request:after"], DEADLINE_S, "a later publish")
        assert not here.pending, "every publish was answered: nothing fell back to a local dispatch"
    finally:
        bus.close()


def test_a_publish_redis_refuses_reaches_the_waiters_of_its_own_process(held_redis):
    bus = RedisEventBus(held_redis.url, f"horde_test_{uuid.uuid4().hex[:12]}")
    try:
        wait_until(lambda: bus.status() == "ok", DEADLINE_S, "the bus to subscribe")
        here = bus.subscribe("request:lost")
        bus.publish("request:lost")
        wait_until(lambda: held_redis.published == ["request:lost"], DEADLINE_S, "the publish to arrive")
        held_redis.close()  # the answer never comes: the publish fails when the bus's I/O timeout passes
        assert here.wait(DEADLINE_S), "a publish Redis did not take is dispatched in its own process"
    finally:
        bus.close()
