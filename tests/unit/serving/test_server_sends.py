"""An answer that fits in one send goes out in one: its headers and first write together (horde/serving/).
Sent apart, every small answer would cost two packets and wake its reader twice."""

from __future__ import annotations

import gevent
import gevent.socket
import pytest
from gevent.server import StreamServer

from horde.serving.connection import Connection, Limits
from horde.serving.environ import base_environ
from horde.serving.registry import ConnectionRegistry
from horde.serving.response import HEADERS_WITH_FIRST_WRITE_MAX_BYTES

SMALL_BODY = b'{"id": "x", "object": "chat.completion"}'
LARGE_BODY = b"x" * (HEADERS_WITH_FIRST_WRITE_MAX_BYTES + 1)
CHUNKS = [b"data: one\n\n", b"data: two\n\n"]
#: Far more than a loopback socket's send buffer: the first send() takes only part of it.
HUGE_BODY = bytes(range(256)) * (32 * 1024)


def _app(environ, start_response):
    path = environ["PATH_INFO"]
    if path == "/stream":  # no Content-Length on HTTP/1.1: chunked
        start_response("200 OK", [("Content-Type", "text/event-stream")])
        return iter(CHUNKS)
    body = {"/large": LARGE_BODY, "/huge": HUGE_BODY}.get(path, SMALL_BODY)
    start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
    return [body]


@pytest.fixture
def served():
    sends: list[bytes] = []

    class Recording(Connection):
        def send_now(self, data):  # what goes to the socket, one call per send
            sends.append(bytes(data))
            return super().send_now(data)

    registry = ConnectionRegistry(100)
    environ = base_environ(("127.0.0.1", 0))

    def handle(sock, peer):
        Recording(sock, peer, _app, Limits(), registry, environ).run()

    server = StreamServer(("127.0.0.1", 0), handle)
    server.start()
    try:
        yield server.server_port, sends
    finally:
        server.stop(timeout=1)


def _get(port: int, path: str) -> bytes:
    """The whole answer to one GET on a connection the client then closes."""
    with gevent.socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(f"GET {path} HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n".encode())
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
    return received


def test_a_small_answer_goes_out_in_one_send_with_its_headers(served):
    port, sends = served
    answer = gevent.spawn(_get, port, "/small").get(timeout=10)
    assert answer.startswith(b"HTTP/1.1 200 OK\r\n") and answer.endswith(SMALL_BODY)
    assert sends == [answer]


def test_a_stream_s_first_chunk_goes_with_the_headers_and_each_later_chunk_alone(served):
    port, sends = served
    answer = gevent.spawn(_get, port, "/stream").get(timeout=10)
    assert b"Transfer-Encoding: chunked" in answer
    assert len(sends) == 3  # the headers with the first chunk, the second chunk, the last (empty) chunk
    assert sends[0].endswith(b"%x\r\n%s\r\n" % (len(CHUNKS[0]), CHUNKS[0]))
    assert sends[1] == b"%x\r\n%s\r\n" % (len(CHUNKS[1]), CHUNKS[1])
    assert b"".join(sends) == answer


def test_a_first_write_past_the_bound_is_not_copied_but_sent_after_its_headers(served):
    port, sends = served
    answer = gevent.spawn(_get, port, "/large").get(timeout=10)
    assert answer.endswith(LARGE_BODY)
    assert sends[-1] == LARGE_BODY and b"".join(sends) == answer
    assert sends[0].startswith(b"HTTP/1.1 200 OK\r\n") and sends[0].endswith(b"\r\n\r\n")


def test_an_answer_larger_than_the_send_buffer_arrives_whole_and_counted(served):
    """The first send() takes what the buffer holds; the rest follows, in order, and the length counts it all."""
    port, sends = served
    answer = gevent.spawn(_get, port, "/huge").get(timeout=30)
    assert answer.endswith(b"\r\n\r\n" + HUGE_BODY)
    assert sends[-1] == HUGE_BODY
