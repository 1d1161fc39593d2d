"""Request smuggling and malformed framing over raw sockets, against both ways of serving: `python -m horde
serve` and the production command (gunicorn with HordeWorker, two processes).

Each case sends a request whose framing is ambiguous, with a second request hidden where a lenient parser
would read one (the body, or what follows it). It must come back with exactly one answer, of the expected
status, and the connection closed; the hidden request must never run (the server's request log never
names its path).
"""

from __future__ import annotations

import contextlib
import json
import select
import socket
import time

import pytest

from tests.support.harness import Harness
from tests.support.processes import GunicornServer
from tests.support.smuggling import (
    PATIENCE_S,
    SMUGGLES,
    assert_one_answer_and_closed,
    exchange,
    hidden_path,
    ran,
    read_until_closed,
    smuggle,
    statuses,
)

pytestmark = pytest.mark.e2e
#: A second for a body: five times the trickle below (a byte every 0.2 s), so only the whole body's deadline ends it.
SETTINGS = {"HORDE_HTTP_BODY_TIMEOUT_S": 1, "HORDE_HTTP_HEADER_TIMEOUT_S": 5}


@pytest.fixture(scope="module", params=["serve", "gunicorn"])
def served(request, tmp_path_factory):
    """(harness, server): the server answers on its own port; the harness makes users in its database."""
    gunicorn = request.param == "gunicorn"
    harness = Harness(
        f"sqlite:///{tmp_path_factory.mktemp('framing') / 'horde.db'}", SETTINGS, servers=0 if gunicorn else 1
    )
    server = harness.server
    if gunicorn:
        server = GunicornServer(harness.env)
        harness.servers.append(server)
    yield harness, server
    harness.close()


@pytest.mark.parametrize("case", list(SMUGGLES))
@pytest.mark.parametrize("path", ["/v1/models", "/api/v2/generate/text/async"])
def test_a_smuggled_request_is_never_answered(served, case, path):
    _, server = served
    framing, body, status = SMUGGLES[case]
    data, hidden = smuggle(framing, body, path)
    answer = json.loads(assert_one_answer_and_closed(server, data, status, hidden))
    if path.startswith("/v1/"):
        assert answer["error"]["code"] in ("BadRequest", "transfer_coding_not_implemented")
    else:
        assert answer["rc"] in ("BadRequest", "transfer_coding_not_implemented")


@pytest.mark.parametrize(
    "head",
    [b"POST /v1/models HTTP/1.1\r\n", b"POST /v1/models HTTP/1.0\r\nTransfer-Encoding: chunked\r\n"],
    ids=["no Host on HTTP/1.1", "chunked on HTTP/1.0"],
)
def test_hosts_and_versions(served, head):
    _, server = served
    hidden = hidden_path()
    data = head + b"\r\n0\r\n\r\n" + f"GET {hidden} HTTP/1.1\r\nHost: x\r\n\r\n".encode()
    assert_one_answer_and_closed(server, data, 400, hidden)


def test_a_captured_next_request_is_not_run_as_the_attacker_s(served):
    """The attacker's body ends in an unfinished request line; a shared connection then carries the victim's
    request. A lenient parser would join the two and run the attacker's path with the victim's key."""
    harness, server = served
    victim_key = harness.user(kudos=5)
    hidden = hidden_path()
    attack = (
        b"POST /api/v2/generate/text/async HTTP/1.1\r\nHost: x\r\n"
        b"Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"0\r\n\r\n" + f"GET {hidden} HTTP/1.1\r\nX-Ignore: ".encode()
    )
    victim = f"GET /api/v2/find_user HTTP/1.1\r\nHost: x\r\napikey: {victim_key}\r\n\r\n".encode()
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=PATIENCE_S)
    try:
        sock.sendall(attack)
        with contextlib.suppress(OSError):  # already closed: the victim's request is not sent on it at all
            sock.sendall(victim)
        received, closed = read_until_closed(sock)
    finally:
        sock.close()
    assert statuses(received) == [400] and closed
    assert b'"kudos"' not in received
    assert not ran(server, hidden)


def test_a_header_block_of_six_megabytes_is_431_without_reading_it_whole(served):
    _, server = served
    hidden = hidden_path()
    block = b"".join(b"X-Big-%d: %s\r\n" % (index, b"a" * 65_536) for index in range(99))
    data = b"GET /v1/models HTTP/1.1\r\nHost: x\r\n" + block + b"\r\n" + f"GET {hidden} HTTP/1.1\r\n\r\n".encode()
    body = assert_one_answer_and_closed(server, data, 431, hidden)
    assert json.loads(body)["error"]["code"] == "request_header_fields_too_large"


@pytest.mark.parametrize("path", ["/health", "/v1/models", "/v1/chat/completions", "/api/v2/generate/text/async"])
def test_a_malformed_chunk_size_is_answered_once_and_logs_no_traceback(served, path):
    """Whether the route reads the body (400) or not (its own answer, then the close)."""
    _, server = served
    hidden = hidden_path()
    data = (
        f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n".encode()
        + b"Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n"
        + f"GET {hidden} HTTP/1.1\r\nHost: x\r\n\r\n".encode()
    )
    received, closed = exchange(server, data)
    assert len(statuses(received)) == 1 and closed
    if path in ("/v1/chat/completions", "/api/v2/generate/text/async"):
        assert statuses(received) == [400]
    assert "Traceback" not in server.output() and not ran(server, hidden)


def test_a_body_that_does_not_arrive_in_time_is_408_and_closed(served):
    harness, server = served
    key = harness.user(kudos=5)
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=PATIENCE_S)
    try:
        sock.sendall(
            b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            + f"Authorization: Bearer {key}\r\nContent-Length: 100000\r\n\r\n{{".encode()
        )
        deadline = time.monotonic() + PATIENCE_S
        while time.monotonic() < deadline and not select.select([sock], [], [], 0.2)[0]:
            sock.sendall(b" ")  # a byte every 0.2 s: each read is quick, the body never ends
        received, closed = read_until_closed(sock)
    finally:
        sock.close()
    assert statuses(received) == [408] and closed
    assert json.loads(received.partition(b"\r\n\r\n")[2])["error"]["code"] == "request_timeout"


def test_the_connection_stays_usable_after_well_framed_requests(served):
    """The rules refuse nothing real clients send: chunked and length-framed bodies, kept alive."""
    _, server = served
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=PATIENCE_S)
    try:
        sock.sendall(
            b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n"
            b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: 2\r\n\r\n{}"
            b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        )
        received, closed = read_until_closed(sock)
    finally:
        sock.close()
    assert statuses(received) == [400, 400, 200] and closed
    assert received.count(b"Missing required parameter: 'model'") == 2
