"""The framing rules of RFC 9112 that h11 leaves to its user, and the answer to each request it refuses.

h11 already refuses a Content-Length that is not all digits or repeated with another value, a name that is
not a token, CR, LF or NUL in a value, a missing or repeated Host on HTTP/1.1, any Transfer-Encoding but
one `chunked`, and a head past its size bound. What is left here:

- a request with both Transfer-Encoding and Content-Length is refused (RFC 9112 section 6.1 allows serving
  it as chunked and then closing, or refusing it: refusing is the simpler and the safer);
- Transfer-Encoding on HTTP/1.0 is refused (section 6.1: the framing is faulty);
- more than MAX_HEADER_LINES header lines is 431, as a head above HORDE_MAX_HEADER_BYTES is;
- an HTTP version other than 1.0 and 1.1 is 505;
- the status of a Transfer-Encoding h11 refused: 501 for a coding the Horde does not implement (`gzip`,
  `xchunked`), 400 for a framing that is ambiguous (two Transfer-Encoding lines, `chunked` twice or not last).

Every refusal is answered, then the connection closes: nothing after the head is read as a request.
"""

from __future__ import annotations

from typing import Any

import h11

from horde import errors

MAX_HEADER_LINES = 100
#: Codings a Transfer-Encoding line may name without a 501: identity is known only to be refused as not final.
KNOWN_TRANSFER_CODINGS = frozenset({b"chunked", b"identity"})
SUPPORTED_HTTP_VERSIONS = frozenset({b"1.0", b"1.1"})
#: How much of h11's reason a 400 quotes: it may hold a line of the client's head.
REASON_QUOTE_CHARS = 200


def check_request(request: h11.Request, environ: dict[str, Any]) -> errors.HordeError | None:
    """Why the head h11 accepted is refused, or None; `environ` is the request's (horde/serving/environ.py)."""
    if request.http_version not in SUPPORTED_HTTP_VERSIONS:
        return errors.HttpVersionNotSupported("The Horde speaks HTTP/1.1 and HTTP/1.0 only.")
    chunked = "HTTP_TRANSFER_ENCODING" in environ  # h11 let only one `chunked` through
    length = "CONTENT_LENGTH" in environ
    if len(request.headers) > MAX_HEADER_LINES:
        return errors.RequestHeaderFieldsTooLarge(f"The request has more than {MAX_HEADER_LINES} header lines.")
    if chunked and length:
        return errors.BadRequest(
            "The request has both Transfer-Encoding and Content-Length: its body's length is ambiguous."
        )
    if chunked and request.http_version == b"1.0":
        return errors.BadRequest("Transfer-Encoding is not allowed on an HTTP/1.0 request.")
    return None


def transfer_coding_refusal(lines: list[bytes]) -> errors.HordeError | None:
    """The refusal of a request whose Transfer-Encoding lines are `lines` (their values), or None."""
    if not lines:
        return None
    if len(lines) > 1:
        return errors.BadRequest(
            "The request has more than one Transfer-Encoding line: its body's length is ambiguous."
        )
    codings = [coding.strip().lower() for coding in lines[0].split(b",")]
    unknown = [coding for coding in codings if coding and coding not in KNOWN_TRANSFER_CODINGS]
    if unknown:
        name = unknown[0][:REASON_QUOTE_CHARS].decode("latin-1")
        return errors.TransferCodingNotImplemented(f"The transfer coding '{name}' is not implemented: only chunked is.")
    if codings != [b"chunked"]:
        return errors.BadRequest("Transfer-Encoding must be chunked alone: its body's length is ambiguous.")
    return None


def parser_refusal(error: h11.RemoteProtocolError, head: bytes, max_header_bytes: int) -> errors.HordeError:
    """The answer to a head h11 refused; `head` is what arrived of it (at most max_header_bytes)."""
    if error.error_status_hint == errors.RequestHeaderFieldsTooLarge.status:
        return head_too_large(max_header_bytes)
    reason = str(error)
    if "Transfer-Encoding" in reason:
        refusal = transfer_coding_refusal(transfer_encoding_lines(head))
        if refusal is not None:
            return refusal
    return errors.BadRequest(f"The request's line or headers are malformed: {reason[:REASON_QUOTE_CHARS]}")


def head_too_large(max_header_bytes: int) -> errors.HordeError:
    return errors.RequestHeaderFieldsTooLarge(
        f"The request line and headers are larger than the limit of {max_header_bytes} bytes."
    )


def transfer_encoding_lines(head: bytes) -> list[bytes]:
    """The values of the Transfer-Encoding lines of a raw head (only to choose a refusal's status)."""
    lines = head.split(b"\n")
    found = []
    for line in lines[1:]:
        line = line.rstrip(b"\r")
        if not line:
            break
        name, colon, value = line.partition(b":")
        if colon and name.lower() == b"transfer-encoding":
            found.append(value.strip(b" \t"))
    return found


def request_path(head: bytes) -> str:
    """The path of a raw request line, as far as it can be read, for choosing an error's shape."""
    parts = head.split(b"\n", 1)[0].split(b" ")
    return parts[1].decode("latin-1") if len(parts) > 1 else ""
