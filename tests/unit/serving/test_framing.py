"""The framing rules on top of h11 (horde/serving/framing.py): each head h11 reads, and each it refuses."""

from __future__ import annotations

import h11
import pytest

from horde import errors
from horde.serving import environ, framing

MAX_HEADER_BYTES = 65_536


def parsed(head: bytes) -> h11.Request | errors.HordeError:
    """What the server makes of `head`: the request h11 read and the rules let through, or the refusal."""
    parser = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEADER_BYTES)
    parser.receive_data(head)
    try:
        event = parser.next_event()
    except h11.RemoteProtocolError as error:
        return framing.parser_refusal(error, head, MAX_HEADER_BYTES)
    assert type(event) is h11.Request, event
    return framing.check_request(event, environ.build(event, {}, None, None)) or event


def status(head: bytes) -> int:
    result = parsed(head)
    return result.status if isinstance(result, errors.HordeError) else 200


POST = b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"


@pytest.mark.parametrize(
    "lines, expected",
    [
        (b"Transfer-Encoding: chunked\r\n", 200),
        (b"Transfer-Encoding: Chunked\r\n", 200),
        (b"Content-Length: 82\r\n", 200),
        (b"Content-Length: 82\r\nContent-Length: 82\r\n", 200),
        (b"Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n", 400),
        (b"Transfer-Encoding: chunked, chunked\r\n", 400),
        (b"Transfer-Encoding: chunked, identity\r\n", 400),
        (b"Transfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\n", 400),
        (b"Transfer-Encoding: identity\r\n", 400),
        (b"Transfer-Encoding: chunked,\r\n", 400),
        (b"Transfer-Encoding: xchunked\r\n", 501),
        (b"Transfer-Encoding: gzip, chunked\r\n", 501),
        (b"Transfer-Encoding: chunked\r\nContent-Length: 5\r\n", 400),
        (b"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n", 400),
        (b"Content-Length: 82\r\nContent-Length: 83\r\n", 400),
        (b"Content-Length: 82, 83\r\n", 400),
        (b"Content-Length: +82\r\n", 400),
        (b"Content-Length: 8_2\r\n", 400),
        (b"Content-Length: \x0b82\r\n", 400),
        (b"Content-Length: -0\r\n", 400),
        (b"Content-Length: 0x10\r\n", 400),
        (b"X-Thing: a\rb\r\n", 400),
        (b"X-Thing: a\x00b\r\n", 400),
        (b"X Thing: a\r\n", 400),
        (b"Host : x\r\n", 400),
        (b'(@)"{}: a\r\n', 400),
        (b"Host: y\r\n", 400),
    ],
)
def test_each_framing_on_http_1_1(lines, expected):
    assert status(POST + lines + b"\r\n") == expected


@pytest.mark.parametrize(
    "head, expected",
    [
        (b"GET /health HTTP/1.1\r\n\r\n", 400),
        (b"GET /health HTTP/1.0\r\n\r\n", 200),
        (b"POST /health HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", 400),
        (b"GET /health HTTP/1.2\r\nHost: x\r\n\r\n", 505),
        (b"GET /health HTTP/2.0\r\nHost: x\r\n\r\n", 505),
        (b"GET /health HTTP/1.1\r\nHost: x\r\n" + b"".join(b"X-%d: v\r\n" % n for n in range(100)) + b"\r\n", 431),
        (b"GET /health HTTP/1.1\r\nHost: x\r\n" + b"".join(b"X-%d: v\r\n" % n for n in range(99)) + b"\r\n", 200),
    ],
    ids=["no host", "no host on 1.0", "te on 1.0", "version 1.2", "version 2.0", "101 lines", "100 lines"],
)
def test_versions_hosts_and_line_counts(head, expected):
    assert status(head) == expected


def test_a_refusal_says_why_and_keeps_a_quote_short():
    refusal = parsed(POST + b"X-Thing: a\x00" + b"b" * 10_000 + b"\r\n\r\n")
    assert isinstance(refusal, errors.BadRequest)
    assert refusal.message.startswith("The request's line or headers are malformed: illegal header line")
    assert len(refusal.message) < 300


def test_the_status_of_an_unknown_coding_names_it():
    refusal = parsed(POST + b"Transfer-Encoding: gzip, chunked\r\n\r\n")
    assert isinstance(refusal, errors.TransferCodingNotImplemented)
    assert refusal.rc == "transfer_coding_not_implemented" and "'gzip'" in refusal.message


def test_a_head_past_h11_s_bound_is_431():
    parser = h11.Connection(h11.SERVER, max_incomplete_event_size=1024)
    parser.receive_data(b"GET / HTTP/1.1\r\nHost: x\r\nX: " + b"a" * 2000)
    with pytest.raises(h11.RemoteProtocolError) as refused:
        parser.next_event()
    refusal = framing.parser_refusal(refused.value, b"", 1024)
    assert (refusal.status, refusal.rc) == (431, "request_header_fields_too_large")
    assert "1024 bytes" in refusal.message


@pytest.mark.parametrize(
    "head, lines",
    [
        (
            b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\ntransfer-encoding:  gzip \r\n\r\nTransfer-Encoding: x",
            [b"chunked", b"gzip"],
        ),
        (b"POST / HTTP/1.1\nHost: x\nTransfer-Encoding: a, b\n\n", [b"a, b"]),
        (b"POST / HTTP/1.1\r\nX-Transfer-Encoding: chunked\r\n\r\n", []),
    ],
    ids=["two lines, the body not read", "bare newlines", "another name"],
)
def test_transfer_encoding_lines_of_a_raw_head(head, lines):
    assert framing.transfer_encoding_lines(head) == lines


@pytest.mark.parametrize(
    "head, path",
    [(b"GET /v1/models HTTP/1.1\r\n", "/v1/models"), (b"GARBAGE", ""), (b"", "")],
)
def test_the_path_of_a_raw_request_line(head, path):
    assert framing.request_path(head) == path
