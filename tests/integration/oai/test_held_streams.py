"""A waiting stream holds little and keeps its keepalive cadence: thousands of them wait in one process."""

import types

import gevent
import gevent.event
import gevent.socket
import pytest
from werkzeug.test import EnvironBuilder

from horde.events.bus import request_channel
from horde.oai import waiter
from horde.oai.waiter import FirstRead, Keepalive, Tick
from horde.serving.connection import Connection, Limits
from horde.serving.registry import ConnectionRegistry
from tests.support.native import pop, queued_id

KEEPALIVE_S = 10.0


@pytest.fixture
def client_key(client, make_user):
    _, owner_key = make_user("owner")
    pop(client, owner_key, threads=1)  # online for the model, and never pops again: requests wait
    return make_user("client", kudos=10_000)[1]


def test_the_server_iterates_a_stream_s_own_generator(app, client_key):
    """No werkzeug iterators around the stream: each would be one more level on every waiting stream's stack."""
    environ = EnvironBuilder(
        path="/v1/chat/completions",
        method="POST",
        json={"model": "m1", "messages": [{"role": "user", "content": "Hello"}], "stream": True},
        headers={"Authorization": f"Bearer {client_key}"},
    ).get_environ()
    statuses = []
    body = app(environ, lambda status, headers, exc_info=None: statuses.append(status))
    try:
        assert statuses == ["200 OK"]
        assert isinstance(iter(body), types.GeneratorType)
        assert next(iter(body)).startswith(b": horde queue_position=")
    finally:
        body.close()


class Clock:
    def __init__(self, now: float):
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_a_late_keepalive_does_not_push_the_next_one_back(runtime, client, client_key, monkeypatch):
    request_id = queued_id(client, client_key)
    clock = Clock(1000.0)
    monkeypatch.setattr(waiter.time, "monotonic", clock)
    events = waiter.watch(runtime, request_id, keepalive_s=KEEPALIVE_S)
    try:
        assert isinstance(next(events), FirstRead)
        clock.now += KEEPALIVE_S + 2  # the process was busy: this keepalive is 2 s late
        runtime.bus.publish(request_channel(request_id))
        assert isinstance(next(events), Keepalive)
        clock.now += KEEPALIVE_S - 1  # due again one period after the first was due, not after it was sent
        runtime.bus.publish(request_channel(request_id))
        assert not isinstance(next(events), Tick)
    finally:
        events.close()


def test_a_held_connection_keeps_nothing_of_its_request_buffered():
    """Every held stream keeps its connection: no read buffer of its own, and nothing left in h11's."""
    ours, theirs = gevent.socket.socketpair()
    streaming = gevent.event.Event()

    def app(environ, start_response):
        start_response("200 OK", [("Content-Type", "text/event-stream")])
        yield b": first\n\n"
        streaming.set()
        gevent.sleep(30)  # held

    connection = Connection(ours, ("127.0.0.1", 1), app, Limits(), ConnectionRegistry(10), {})
    serving = gevent.spawn(connection.run)
    try:
        theirs.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}")
        assert streaming.wait(10)
        assert connection._parser.trailing_data == (b"", False)
        assert not any(isinstance(value, (bytes, bytearray)) and value for value in vars(connection).values())
    finally:
        serving.kill()
        theirs.close()
