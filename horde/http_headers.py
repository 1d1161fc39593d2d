"""A request's header block, read for gevent's WSGI handler without the email package.

gevent reads headers with http.client.parse_headers, which hands the block to the email package's feed
parser: 2 to 4 % of a serving process's CPU under bench/load.py (py-spy). This reader keeps that parser's
limits (MAX_HEADER_LINE_BYTES a line, MAX_HEADER_LINES lines) and answers the questions gevent's handler
asks of its headers. It is stricter where the HTTP specification lets a server be (RFC 9112, section 5):
a line that is not a field (no colon, an empty name, whitespace before the colon) makes the request a 400,
and a folded line (obsolete) continues the field before it, joined by a space.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import BinaryIO

MAX_HEADER_LINE_BYTES = 65_536
MAX_HEADER_LINES = 100
_END_OF_HEADERS = (b"\r\n", b"\n", b"")
_FOLD_STARTS = (" ", "\t")


class RequestHeaders:
    """The fields in arrival order; `status` is empty, or why the block is not a valid one (gevent answers 400)."""

    __slots__ = ("_first", "fields", "status")

    def __init__(self, fields: list[tuple[str, str]], status: str = "") -> None:
        self.fields = fields
        self.status = status
        self._first: dict[str, str] = {}
        for name, value in fields:
            self._first.setdefault(name.lower(), value)

    def get(self, name: str, default: str | None = None) -> str | None:
        """The first field of that name, whatever its case (as email.message.Message.get)."""
        return self._first.get(name.lower(), default)

    getheader = get

    def __delitem__(self, name: str) -> None:
        """Drop every field of that name; none is no error (as email.message.Message)."""
        lowered = name.lower()
        self.fields = [(key, value) for key, value in self.fields if key.lower() != lowered]
        self._first.pop(lowered, None)

    def items(self) -> list[tuple[str, str]]:
        """The fields, as gunicorn's access log reads them."""
        return list(self.fields)

    @property
    def typeheader(self) -> str | None:
        return self.get("content-type")

    @property
    def headers(self) -> Iterator[str]:
        """The fields as header lines, for code written against gevent's own message class."""
        for name, value in self.fields:
            yield f"{name}: {value}\r\n"


def read_headers(stream: BinaryIO) -> RequestHeaders:
    """Read lines up to the blank one that ends the header block."""
    fields: list[tuple[str, str]] = []
    for _ in range(MAX_HEADER_LINES + 1):
        line = stream.readline(MAX_HEADER_LINE_BYTES + 1)
        if len(line) > MAX_HEADER_LINE_BYTES:
            return RequestHeaders([], "Line too long")
        if line in _END_OF_HEADERS:
            return RequestHeaders(fields)
        text = line.decode("latin-1").rstrip("\r\n")
        if text.startswith(_FOLD_STARTS):
            if not fields:
                return RequestHeaders([], "Invalid header line")
            name, value = fields[-1]
            fields[-1] = (name, f"{value} {text.strip()}" if value else text.strip())
            continue
        name, colon, value = text.partition(":")
        if not colon or not name or name != name.strip():
            return RequestHeaders([], "Invalid header line")
        fields.append((name, value.strip()))
    return RequestHeaders([], f"More than {MAX_HEADER_LINES} header lines")
