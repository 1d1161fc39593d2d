"""A request's body as the app reads it (`wsgi.input`): pulled from h11 as the app asks, never read ahead.

The connection answers `Expect: 100-continue` when the app first asks for data, and stops waiting for the
body HORDE_HTTP_BODY_TIMEOUT_S after the head ended. What goes wrong on the way is an HTTP error of
werkzeug's, which the app renders in its API's shape without a traceback: a malformed chunked body or one
cut short is 400, a body still arriving at its deadline is 408; the connection closes after the answer.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from werkzeug.exceptions import BadRequest, RequestTimeout


class MalformedBody(BadRequest):
    description = "The request's chunked body is malformed, or the connection closed before the body ended."


class BodyTimedOut(RequestTimeout):
    description = "The request's body did not arrive in time."


class RequestBody:
    """File-like over a puller that returns the body's next bytes, or b"" once it ended."""

    def __init__(self, pull: Callable[[], bytes]) -> None:
        self._pull = pull
        self._buffer = b""
        self._ended = False

    def read(self, size: int | None = -1) -> bytes:
        """Up to `size` bytes (all that is left when negative or None): fewer only at the end of the body."""
        pieces = [self._buffer] if self._buffer else []
        have = len(self._buffer)
        while (size is None or size < 0 or have < size) and not self._ended:
            data = self._pull()
            if data:
                pieces.append(data)
                have += len(data)
            else:
                self._ended = True
        data = pieces[0] if len(pieces) == 1 else b"".join(pieces)
        if size is not None and 0 <= size < len(data):
            self._buffer = data[size:]
            return data[:size]
        self._buffer = b""
        return data

    def readline(self, size: int | None = -1) -> bytes:
        while b"\n" not in self._buffer and not self._ended and (size is None or size < 0 or len(self._buffer) < size):
            data = self._pull()
            if data:
                self._buffer += data
            else:
                self._ended = True
        end = self._buffer.find(b"\n") + 1 or len(self._buffer)
        if size is not None and 0 <= size < end:
            end = size
        line, self._buffer = self._buffer[:end], self._buffer[end:]
        return line

    def readlines(self, hint: int = -1) -> list[bytes]:
        lines, total = [], 0
        while line := self.readline():
            lines.append(line)
            total += len(line)
            if 0 < hint <= total:
                break
        return lines

    def __iter__(self) -> Iterator[bytes]:
        while line := self.readline():
            yield line
