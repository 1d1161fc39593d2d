"""Request smuggling cases (issue 38) and the raw-socket helpers that send them, for tests/e2e/test_framing.py
(the Horde's own ways of serving) and tests/e2e/test_nginx.py (the same behind nginx).

Each case is a head whose framing is ambiguous, with a second request hidden where a lenient parser would
read one: in the body, or right after it. The hidden request's path is new each time, so a server's log
shows whether it ever ran.
"""

from __future__ import annotations

import contextlib
import re
import select
import socket
import time
import uuid

PATIENCE_S = 30.0


def hidden_path() -> str:
    return f"/hidden-{uuid.uuid4().hex[:12]}"


def exchange(server, data: bytes) -> tuple[bytes, bool]:
    """Send `data` on a new connection; everything that comes back, and whether the server closed it."""
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=PATIENCE_S)
    try:
        with contextlib.suppress(OSError):  # the server may answer and close before a large head is all sent
            sock.sendall(data)
        return read_until_closed(sock)
    finally:
        sock.close()


def read_until_closed(sock: socket.socket) -> tuple[bytes, bool]:
    received = b""
    deadline = time.monotonic() + PATIENCE_S
    while time.monotonic() < deadline:
        if not select.select([sock], [], [], 0.5)[0]:
            continue
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            return received, True
        if not chunk:
            return received, True
        received += chunk
    return received, False


def statuses(data: bytes) -> list[int]:
    return [int(code) for code in re.findall(rb"HTTP/1\.[01] (\d{3}) ", data)]


def ran(server, path: str) -> bool:
    return path in server.output()


def assert_one_answer_and_closed(server, data: bytes, status: int, hidden: str) -> bytes:
    """One answer of `status`, the connection closed, the hidden request never run, no traceback logged."""
    received, closed = exchange(server, data)
    assert statuses(received) == [status], received[:600]
    assert closed, "the server kept the connection open"
    head, _, body = received.partition(b"\r\n\r\n")
    assert b"connection: close" in head.lower()
    assert b"Traceback" not in body and len(body) < 1024
    assert not ran(server, hidden), f"the hidden request {hidden} ran"
    assert "Traceback" not in server.output()
    return body


def smuggle(framing: bytes, body: bytes, path: str = "/v1/models", method: bytes = b"POST") -> tuple[bytes, str]:
    hidden = hidden_path()
    hidden_request = f"GET {hidden} HTTP/1.1\r\nHost: x\r\n\r\n".encode()
    head = method + b" " + path.encode() + b" HTTP/1.1\r\nHost: x\r\n" + framing + b"\r\n"
    return head + body.replace(b"HIDDEN", hidden_request), hidden


CHUNKED_HIDDEN = b"0\r\n\r\nHIDDEN"
SMUGGLES = {
    "chunked twice": (b"Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n", CHUNKED_HIDDEN, 400),
    "chunked, chunked": (b"Transfer-Encoding: chunked, chunked\r\n", CHUNKED_HIDDEN, 400),
    "chunked, identity": (b"Transfer-Encoding: chunked, identity\r\n", CHUNKED_HIDDEN, 400),
    "chunked and an identity line": (
        b"Transfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\n",
        CHUNKED_HIDDEN,
        400,
    ),
    "xchunked": (b"Transfer-Encoding: xchunked\r\n", CHUNKED_HIDDEN, 501),
    "gzip, chunked": (b"Transfer-Encoding: gzip, chunked\r\n", CHUNKED_HIDDEN, 501),
    "two lengths": (b"Content-Length: 0\r\nContent-Length: 40\r\n", b"HIDDEN", 400),
    "length +82": (b"Content-Length: +36\r\n", b"HIDDEN", 400),
    "length 8_2": (b"Content-Length: 3_6\r\n", b"HIDDEN", 400),
    "length \\x0b82": (b"Content-Length: \x0b36\r\n", b"HIDDEN", 400),
    "length -0": (b"Content-Length: -0\r\n", b"HIDDEN", 400),
    "length 0x10": (b"Content-Length: 0x10\r\n", b"HIDDEN", 400),
    "chunked with a length": (b"Transfer-Encoding: chunked\r\nContent-Length: 5\r\n", CHUNKED_HIDDEN, 400),
    "length with chunked": (b"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n", CHUNKED_HIDDEN, 400),
    "CR in a value": (b"X-Note: a\rb\r\nContent-Length: 0\r\n", b"HIDDEN", 400),
    "NUL in a value": (b"X-Note: a\x00b\r\nContent-Length: 0\r\n", b"HIDDEN", 400),
    "a space in a name": (b"X Note: a\r\nContent-Length: 0\r\n", b"HIDDEN", 400),
    '(@)"{} in a name': (b'(@)"{}: a\r\nContent-Length: 0\r\n', b"HIDDEN", 400),
    "a second Host": (b"Host: y\r\nContent-Length: 0\r\n", b"HIDDEN", 400),
}
