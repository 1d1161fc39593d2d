"""The answers the connection loop writes itself, outside the app: a refused head, a body timeout, a full process.

Each is a small JSON body in the shape of the path's API (OpenAI's envelope under the front's prefix, the
native `{"message", "rc"}` elsewhere) with `Connection: close`. Never a traceback.
"""

from __future__ import annotations

import json
from email.utils import formatdate
from http import HTTPStatus

from horde import errors
from horde.oai.errors import from_horde_error

_last_date: tuple[int, bytes] = (0, b"")


def http_date(now_s: float) -> bytes:
    """The Date header's value, formatted once a second."""
    global _last_date
    second = int(now_s)
    if _last_date[0] != second:
        _last_date = (second, formatdate(second, usegmt=True).encode("ascii"))
    return _last_date[1]


def error_answer(error: errors.HordeError, path: str, oai_prefix: str, now_s: float) -> bytes:
    """The whole answer to a refused request, ready to send; the connection closes after it."""
    if path.startswith(oai_prefix.rstrip("/") + "/"):
        body = json.dumps(from_horde_error(error)).encode()
    else:
        body = json.dumps(error.to_native()).encode()
    phrase = HTTPStatus(error.status).phrase
    lines = [
        f"HTTP/1.1 {error.status} {phrase}".encode("ascii"),
        b"Content-Type: application/json",
        b"Content-Length: %d" % len(body),
        b"Connection: close",
        b"Date: " + http_date(now_s),
    ]
    lines.extend(f"{name}: {value}".encode("latin-1") for name, value in error.headers.items())
    return b"\r\n".join(lines) + b"\r\n\r\n" + body
