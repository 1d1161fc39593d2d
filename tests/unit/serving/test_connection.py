"""The connection loop (horde/serving/connection.py) in-process on gevent, with a plain WSGI app: keep-alive,
pipelining, 100-continue, bodies the app does not read, the head's bound, the timeouts and the cap."""

from __future__ import annotations

import logging
import re
import time

import gevent
import gevent.event
import gevent.socket
import pytest
from gevent.server import StreamServer
from werkzeug.exceptions import HTTPException

from horde.serving.connection import Connection, Limits
from horde.serving.environ import base_environ
from horde.serving.registry import ConnectionRegistry, Phase

PATIENCE_S = 10.0
RELEASE = gevent.event.Event()
READING = gevent.event.Event()  # set as /echo starts reading its body


def app(environ, start_response):
    path = environ["PATH_INFO"]
    if path == "/echo":
        READING.set()
        try:
            body = environ["wsgi.input"].read()
        except HTTPException as error:  # what werkzeug's apps render as their error answer
            body = f"{error.code}".encode()
            start_response(f"{error.code} Refused", [("Content-Length", str(len(body)))])
            return [body]
    elif path == "/hold":
        RELEASE.wait(PATIENCE_S)
        body = b"held"
    elif path == "/boom":
        raise RuntimeError("a bug")
    else:
        body = f"{environ['REQUEST_METHOD']} {path} {environ['QUERY_STRING']}".encode()
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
    return [body]


class Served:
    def __init__(self, limits: Limits, cap: int):
        self.registry = ConnectionRegistry(cap)
        environ = base_environ(("127.0.0.1", 0))
        self.server = StreamServer(
            ("127.0.0.1", 0),
            lambda sock, peer: Connection(sock, peer, app, limits, self.registry, environ).run(),
        )
        self.server.start()
        self.port = self.server.server_port

    def connect(self) -> gevent.socket.socket:
        return gevent.socket.create_connection(("127.0.0.1", self.port), timeout=PATIENCE_S)


@pytest.fixture
def served(request):
    limits, cap = getattr(request, "param", (Limits(), 100))
    RELEASE.clear()
    READING.clear()
    server = Served(limits, cap)
    yield server
    RELEASE.set()
    server.server.stop(timeout=1)


def until_closed(sock) -> bytes:
    """Everything the server sends until it closes (a reset counts as the close)."""
    received = b""
    try:
        while chunk := sock.recv(65536):
            received += chunk
    except ConnectionResetError:
        pass
    return received


def answers(data: bytes) -> list[bytes]:
    """The status lines in `data` (the test app's bodies hold none)."""
    return re.findall(rb"HTTP/1\.1 \d{3} [^\r\n]*", data)


def test_kept_alive_and_pipelined_requests_are_answered_in_order(served):
    sock = served.connect()
    sock.sendall(
        b"GET /one?a=1 HTTP/1.1\r\nHost: x\r\n\r\n"
        b"GET /two HTTP/1.1\r\nHost: x\r\n\r\n"
        b"GET /%C3%A9 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    received = until_closed(sock)
    assert answers(received) == [b"HTTP/1.1 200 OK"] * 3
    assert received.index(b"GET /one a=1") < received.index(b"GET /two ") < received.index("GET /\xc3\xa9 ".encode())


def test_100_continue_is_sent_when_the_app_first_reads(served):
    sock = served.connect()
    sock.sendall(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n")
    assert sock.recv(1024).startswith(b"HTTP/1.1 100 ")
    sock.sendall(b"hello")
    head = sock.recv(1024)
    assert head.startswith(b"HTTP/1.1 200 OK") and head.endswith(b"hello")


def test_a_body_the_app_does_not_read_closes_the_connection_and_is_never_a_request(served):
    sock = served.connect()
    hidden = b"GET /hidden HTTP/1.1\r\nHost: x\r\n\r\n"
    sock.sendall(b"POST /plain HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n" + hidden)
    received = until_closed(sock)
    assert answers(received) == [b"HTTP/1.1 200 OK"] and b"Connection: close" in received
    assert b"/hidden" not in received


def test_a_small_unread_body_that_already_arrived_keeps_the_connection(served):
    sock = served.connect()
    sock.sendall(
        b"POST /plain HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\nbodyGET /next HTTP/1.1\r\nHost: x\r\n\r\n"
    )
    deadline = time.monotonic() + PATIENCE_S
    received = b""
    while received.count(b"HTTP/1.1 200 OK") < 2 and time.monotonic() < deadline:
        received += sock.recv(65536)
    assert b"POST /plain" in received and b"GET /next" in received and b"Connection: close" not in received


@pytest.mark.parametrize(
    "body, status",
    [(b"Transfer-Encoding: chunked\r\n\r\nzz\r\nab\r\n0\r\n\r\n", b"400"), (b"Content-Length: 10\r\n\r\nabc", b"408")],
    ids=["malformed chunk size", "body too slow"],
)
@pytest.mark.parametrize("served", [(Limits(body_timeout_s=0.5), 100)], indirect=True)
def test_a_body_the_app_cannot_read_is_an_error_for_the_app_then_the_connection_closes(served, body, status):
    sock = served.connect()
    sock.sendall(b"POST /echo HTTP/1.1\r\nHost: x\r\n" + body)
    received = until_closed(sock)
    assert answers(received) == [b"HTTP/1.1 " + status + b" Refused"] and b"Connection: close" in received


@pytest.mark.parametrize("served", [(Limits(max_header_bytes=1024), 100)], indirect=True)
def test_the_head_is_bounded_to_the_byte(served):
    line = b"GET /fits HTTP/1.1\r\nHost: x\r\nX: "
    at_limit = line + b"a" * (1024 - len(line) - 4) + b"\r\n\r\n"
    assert len(at_limit) == 1024
    sock = served.connect()
    sock.sendall(at_limit)
    assert sock.recv(1024).startswith(b"HTTP/1.1 200 OK")
    over = served.connect()
    over.sendall(line + b"a" * (1024 - len(line) - 3) + b"\r\n\r\n")
    received = until_closed(over)
    assert answers(received) == [b"HTTP/1.1 431 Request Header Fields Too Large"]
    assert b'"rc": "request_header_fields_too_large"' in received


@pytest.mark.parametrize("served", [(Limits(idle_timeout_s=0.3, header_timeout_s=0.5), 100)], indirect=True)
def test_idle_and_slow_heads_are_closed_without_an_answer(served):
    idle = served.connect()
    idle.sendall(b"GET /a HTTP/1.1\r\nHost: x\r\n\r\n")
    assert idle.recv(1024).startswith(b"HTTP/1.1 200 OK")
    slow = served.connect()
    started = time.monotonic()
    for _ in range(40):  # one byte every 50 ms: each read is quick, the head is not
        try:
            slow.sendall(b"X")
        except OSError:
            break
        gevent.sleep(0.05)
    assert until_closed(idle) == b"" and until_closed(slow) == b""
    assert time.monotonic() - started < PATIENCE_S


@pytest.mark.parametrize("served", [(Limits(), 2)], indirect=True)
def test_at_the_cap_the_idlest_connection_is_shed_for_a_new_one(served):
    kept = []
    for path in (b"/first", b"/second"):
        sock = served.connect()
        sock.sendall(b"GET " + path + b" HTTP/1.1\r\nHost: x\r\n\r\n")
        assert sock.recv(1024).startswith(b"HTTP/1.1 200 OK")
        kept.append(sock)
    newcomer = served.connect()
    newcomer.sendall(b"GET /third HTTP/1.1\r\nHost: x\r\n\r\n")
    assert newcomer.recv(1024).startswith(b"HTTP/1.1 200 OK")
    assert until_closed(kept[0]) == b""  # idle the longest
    kept[1].sendall(b"GET /again HTTP/1.1\r\nHost: x\r\n\r\n")
    assert kept[1].recv(1024).startswith(b"HTTP/1.1 200 OK")


@pytest.mark.parametrize("served", [(Limits(), 1)], indirect=True)
def test_a_connection_being_answered_is_not_shed_and_the_newcomer_is_refused(served):
    held = served.connect()
    held.sendall(b"GET /hold HTTP/1.1\r\nHost: x\r\n\r\n")
    deadline = time.monotonic() + PATIENCE_S
    while served.registry.count(Phase.ANSWERING) == 0:
        assert time.monotonic() < deadline
        gevent.sleep(0.01)
    refused = served.connect()
    received = until_closed(refused)
    assert answers(received) == [b"HTTP/1.1 503 Service Unavailable"] and b"too_many_connections" in received
    RELEASE.set()
    assert held.recv(1024).startswith(b"HTTP/1.1 200 OK")


def test_an_app_error_is_a_500_logged_once_and_a_protocol_error_logs_nothing(served, caplog):
    caplog.set_level(logging.INFO, logger="horde.serving")
    sock = served.connect()
    sock.sendall(b"GET /boom HTTP/1.1\r\nHost: x\r\n\r\n")
    assert answers(until_closed(sock)) == [b"HTTP/1.1 500 Internal Server Error"]
    assert [record.exc_info[0] for record in caplog.records] == [RuntimeError]
    caplog.clear()
    for head in (b"GET / HTTP/1.1\r\n\r\n", b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"):
        sock = served.connect()
        sock.sendall(head)
        until_closed(sock)
    assert caplog.records == []


def test_a_head_request_gets_the_headers_only(served):
    sock = served.connect()
    sock.sendall(b"HEAD /plain HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    received = until_closed(sock)
    assert received.startswith(b"HTTP/1.1 200 OK") and received.endswith(b"\r\n\r\n")


@pytest.mark.parametrize("served", [(Limits(), 1)], indirect=True)
def test_a_body_shed_while_the_app_reads_it_is_a_408_for_the_app(served):
    slow = served.connect()
    slow.sendall(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc")
    assert READING.wait(PATIENCE_S)
    newcomer = served.connect()
    newcomer.sendall(b"GET /new HTTP/1.1\r\nHost: x\r\n\r\n")
    assert newcomer.recv(1024).startswith(b"HTTP/1.1 200 OK")
    received = until_closed(slow)
    assert answers(received) == [b"HTTP/1.1 408 Refused"] and b"Connection: close" in received
