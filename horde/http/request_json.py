"""Reading a request's JSON body safely, for both APIs.

Flask's parser recurses: a body nested a few thousand levels deep raises
RecursionError (a 500). Bodies are parsed here instead and refused with 400
BadRequest when they are not JSON or nest deeper than any valid request does.

Parsed, each object or array costs the process a hundred bytes or more for
the few bytes of its text (`{},` is three), so a body's objects and arrays
are counted before json.loads makes them: more than MAX_BODY_CONTAINERS is
400 BadRequest. The raw count of `{` and `[` bounds it from above; only a
body over the limit by that count is counted again outside its strings.

A body larger than HORDE_MAX_BODY_BYTES is refused with 413 from its
Content-Length before a byte of it is read, and a chunked body is counted while
it is read, so no request holds more than the limit in memory.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from flask import Request
from werkzeug.exceptions import HTTPException, RequestEntityTooLarge, RequestTimeout

from horde import errors
from horde.cooperative import pause_every

MAX_BODY_DEPTH = 64
#: Objects and arrays in one JSON body. Real clients stay far below: Claude Code's first request (24 tools
#: with their JSON schemas, about 100 KB) holds about 2,000, 2,048 messages of content parts about 8,000,
#: and an agent's session at the message limit, each turn a tool call and its result, about 10,000. The
#: bodies it refuses are the pathological ones, such as a million empty text blocks (31 MB) sent to
#: /v1/messages/count_tokens. Parsed and screened, a block costs the process 300 to 800 bytes for its 26
#: bytes of text (bench/memory.py), so the limit bounds what one body's objects can hold to about 40 MB.
MAX_BODY_CONTAINERS = 50_000
READ_CHUNK_BYTES = 64 * 1024
# NUL cannot be stored in PostgreSQL text, and a lone surrogate is not Unicode at all (it cannot be encoded).
_UNSTORABLE_RE = re.compile("[\x00\ud800-\udfff]")
# In UTF-8 JSON text these come only as escapes (\u0000, \ud800...) or as raw surrogate bytes, which
# json.loads lets through; a UTF-16 or UTF-32 body always holds NUL bytes. A body with none of these
# needs no look at its strings.
_MAYBE_UNSTORABLE_RE = re.compile(rb"\\u(?:0000|[dD][89a-fA-F])|\xed[\xa0-\xbf]|\x00")
#: Every byte but a quote and the two openers: what the exact count of objects and arrays throws away first.
_NOT_QUOTE_OR_OPENER = bytes(byte for byte in range(256) if byte not in b'"{[')
#: In what is left of a body once escapes and every other byte are gone: a string, or an opener outside any.
_STRING_OR_OPENER_RE = re.compile(rb'"[^"]*"|[{\[]')


#: Flask endpoints whose body may pass HORDE_MAX_BODY_BYTES (an upload: horde/oai/file_routes.py), each with its own
#: limit worked out from the settings; every other body keeps HORDE_MAX_BODY_BYTES.
LARGER_BODIES: dict[str, Callable[[Any], int]] = {}


def body_limit(endpoint: str | None, settings: Any) -> int:
    """The most bytes the body of a request to `endpoint` may hold."""
    larger = LARGER_BODIES.get(endpoint or "")
    return settings.max_body_bytes if larger is None else larger(settings)


def too_large(max_bytes: int) -> errors.RequestTooLarge:
    return errors.RequestTooLarge(
        f"The request body is larger than the limit of {max_bytes} bytes.", headers={"Connection": "close"}
    )


def check_declared_length(request: Request, max_bytes: int) -> None:
    """Refuse from the Content-Length header alone, before reading."""
    if request.content_length is not None and request.content_length > max_bytes:
        raise too_large(max_bytes)


def read(request: Request, max_bytes: int) -> bytes:
    """The raw body, at most `max_bytes` of it; a malformed chunked body is 400 BadRequest."""
    check_declared_length(request, max_bytes)
    chunks, size = [], 0
    try:
        while True:
            chunk = request.stream.read(READ_CHUNK_BYTES)
            if not chunk:
                break
            size += len(chunk)
            if size > max_bytes:
                raise too_large(max_bytes)
            chunks.append(chunk)
    except RequestEntityTooLarge:
        raise too_large(max_bytes) from None
    except RequestTimeout:  # the server's body deadline (HORDE_HTTP_BODY_TIMEOUT_S)
        raise errors.RequestTimeout(
            "The body of your request did not arrive in time.", headers={"Connection": "close"}
        ) from None
    except (ValueError, OSError, HTTPException):  # a malformed chunked body, a cut connection
        raise errors.BadRequest(
            "We could not read the body of your request: the connection closed early or "
            "its chunked encoding is malformed.",
            headers={"Connection": "close"},
        ) from None
    return b"".join(chunks)


def read_json(request: Request, max_bytes: int) -> Any:
    """The parsed body of `request` (None when empty), within the size limit."""
    return parse(read(request, max_bytes))


def parse(raw: bytes) -> Any:
    """The parsed body, or None when it is empty."""
    if not raw:
        return None
    if containers(raw, MAX_BODY_CONTAINERS) > MAX_BODY_CONTAINERS:
        raise errors.BadRequest(f"The JSON body holds more than {MAX_BODY_CONTAINERS} objects and arrays.")
    try:
        body = json.loads(raw)
    except (ValueError, RecursionError):
        raise errors.BadRequest("We could not parse the JSON body of your request. The body must be JSON.") from None
    if depth(body) > MAX_BODY_DEPTH:
        raise errors.BadRequest(f"The JSON body nests deeper than {MAX_BODY_DEPTH} levels.")
    if _MAYBE_UNSTORABLE_RE.search(raw):  # only then look at every string: most bodies have no such escape
        param = unstorable_path(body)
        if param is not None:
            raise errors.BadRequest(
                f"The string at '{param}' holds a NUL character or a lone surrogate, which the "
                "Horde does not accept in any string.",
                param=param or None,
            )
    return body


def containers(raw: bytes, limit: int) -> int:
    """How many objects and arrays a UTF-8 body opens: the raw count of `{` and `[`, an upper bound, when it is
    within `limit`; else the count outside strings, up to the first opener past `limit`.

    The exact count runs in C but for one step per string left: escaped backslashes and quotes go, then every
    byte but quotes and openers, then every pair of adjacent quotes (which keeps each opener's side of the
    strings). A string that is left holds an opener and ends next to an opener outside strings, so the count
    stops after at most about twice `limit` steps, whatever the body.
    """
    upper = raw.count(b"{") + raw.count(b"[")
    if upper <= limit:
        return upper
    if b"\\" in raw:
        raw = raw.replace(b"\\\\", b"").replace(b'\\"', b"")
    kept = raw.translate(None, _NOT_QUOTE_OR_OPENER).replace(b'""', b"")
    count = 0
    for match in _STRING_OR_OPENER_RE.finditer(kept):
        if match.end() - match.start() == 1:
            count += 1
            if count > limit:
                break
    return count


def depth(value: Any) -> int:
    """How deeply arrays and objects nest in `value`, level by level, without recursion.

    It stops counting past MAX_BODY_DEPTH: the caller refuses anything deeper.
    """
    deepest, level = 0, [value] if isinstance(value, (dict, list)) else []
    while level and deepest <= MAX_BODY_DEPTH:
        deepest += 1
        below: list = []
        for node in pause_every(level):
            below.extend(
                child
                for child in (node.values() if isinstance(node, dict) else node)
                if isinstance(child, (dict, list))
            )
        level = below
    return deepest


def is_storable(text: str) -> bool:
    return _UNSTORABLE_RE.search(text) is None


def unstorable_path(value: Any) -> str | None:
    """The path (messages[0].content) of an unstorable string or key, for the refusal's param; None if none."""
    stack = [(value, "")]
    while stack:
        node, path = stack.pop()
        if isinstance(node, str):
            if not is_storable(node):
                return path
        elif isinstance(node, dict):
            for key, child in node.items():
                child_path = f"{path}.{key}" if path else key
                if not is_storable(key):
                    return child_path.encode("utf-8", "backslashreplace").decode()
                stack.append((child, child_path))
        elif isinstance(node, list):
            stack.extend((child, f"{path}[{index}]") for index, child in enumerate(node))
    return None
