"""A WSGI answer: `start_response`, the body's writes, its end, framed for HTTP/1.1.

h11 reads the requests; the answers, which are the app's and not a client's, are framed here: sending them
through h11's state machine as well cost about as much CPU again as reading the request (decision 0027).
The body is framed by its Content-Length when the app gives one, else chunked (HTTP/1.1) or ended by the close
(HTTP/1.0); an answer to HEAD, and a 204 or 304, has none.

The status line and headers wait for the first write of the body and go out in the same send, up to
HEADERS_WITH_FIRST_WRITE_MAX_BYTES of it (copied once): sent apart, every answer that fits in one packet
would cost two, and two wake-ups of its reader. Each later write (an SSE event) goes out at once.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Protocol

from horde.serving.answers import http_date

HEADERS_WITH_FIRST_WRITE_MAX_BYTES = 64 * 1024
#: Statuses whose answer has no body whatever the app writes.
_BODILESS_STATUSES = frozenset({204, 304})
#: Header names the framing here owns: the app's are dropped (Connection is read, then written again).
_FRAMING_HEADERS = frozenset({"transfer-encoding", "connection"})
_LAST_CHUNK = b"0\r\n\r\n"


class Sender(Protocol):
    def send_now(self, data: bytes) -> None: ...

    def close_after_answer(self) -> bool:
        """Whether the connection must close after this answer (decided when its head goes out)."""
        ...


class AnswerError(Exception):
    """The app's answer cannot be framed: a header with CR or LF, more or less body than its Content-Length."""


class Answer:
    def __init__(self, sender: Sender, head_only: bool, http_1_1: bool) -> None:
        self._sender = sender
        self._head_only = head_only
        self._http_1_1 = http_1_1
        self._chunked = False
        self._left: int | None = None  # bytes of the body its Content-Length still announces
        self.status = ""
        self.headers: list[tuple[str, str]] = []
        self.started = False
        #: Whether the connection closes after this answer (known once its head went out).
        self.closes = False
        self.sent = 0  # bytes of the body, for the access log

    def start_response(self, status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Callable:
        if exc_info and self.started:
            raise exc_info[1].with_traceback(exc_info[2])
        self.status, self.headers = status, headers
        return self.write

    def write(self, data: bytes) -> None:
        if not self.started:
            self._send_head(data)
        elif data and not self._head_only:
            self._sender.send_now(self._framed(data))

    def finish(self) -> None:
        """End the body (the last chunk of a chunked one); the head first, if nothing was written."""
        if not self.started:
            self._send_head(b"")
        if self._chunked:
            self._sender.send_now(_LAST_CHUNK)
        elif self._left:
            self.closes = True
            raise AnswerError(f"the app wrote {self._left} bytes less than its Content-Length")

    def _framed(self, data: bytes) -> bytes:
        self.sent += len(data)
        if self._chunked:
            return b"%x\r\n%b\r\n" % (len(data), data)
        if self._left is not None:
            self._left -= len(data)
            if self._left < 0:
                self.closes = True
                raise AnswerError("the app wrote more than its Content-Length")
        return data

    def _send_head(self, first: bytes) -> None:
        self.started = True
        code = int(self.status[:3])
        self._head_only = self._head_only or code in _BODILESS_STATUSES
        lines = ["HTTP/1.1 " + self.status]
        closes = not self._http_1_1
        has_date = False
        for name, value in self.headers:
            lowered = name.lower()
            if lowered in _FRAMING_HEADERS:
                closes = closes or (lowered == "connection" and "close" in value.lower())
                continue
            if lowered == "content-length":
                self._left = int(value)
            elif lowered == "date":
                has_date = True
            lines.append(f"{name}: {value}")
        if not has_date:
            lines.append("Date: " + http_date(time.time()).decode("ascii"))
        if self._left is None and not self._head_only:
            if self._http_1_1:
                self._chunked = True
                lines.append("Transfer-Encoding: chunked")
            else:
                closes = True  # HTTP/1.0: the body ends where the connection does
        closes = self._sender.close_after_answer() or closes
        if closes:
            lines.append("Connection: close")
        self.closes = closes
        text = "\r\n".join(lines)
        if text.count("\n") >= len(lines) or text.count("\r") >= len(lines):
            raise AnswerError("a header of the app's answer holds CR or LF")
        head = text.encode("latin-1") + b"\r\n\r\n"
        if not first or self._head_only:
            self._sender.send_now(head)
            return
        data = self._framed(first)
        if len(data) <= HEADERS_WITH_FIRST_WRITE_MAX_BYTES:
            self._sender.send_now(head + data)
        else:
            self._sender.send_now(head)
            self._sender.send_now(data)
