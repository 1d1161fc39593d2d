"""The header block reader that replaces http.client's email-based parser in the serving handler."""

import io

import pytest

from horde.http_headers import MAX_HEADER_LINE_BYTES, MAX_HEADER_LINES, read_headers


def read(block: bytes, after: bytes = b"BODY"):
    stream = io.BytesIO(block + after)
    headers = read_headers(stream)
    return headers, stream.read()


def test_fields_keep_their_order_case_and_duplicates_and_the_body_is_left_unread():
    headers, rest = read(b"Host: x\r\nX-Thing:  a \r\nx-thing: b\r\nContent-Type: application/json\r\n\r\n")
    assert headers.status == ""
    assert headers.fields == [("Host", "x"), ("X-Thing", "a"), ("x-thing", "b"), ("Content-Type", "application/json")]
    assert headers.get("X-THING") == "a", "the first of that name, whatever its case"
    assert headers.get("missing", "default") == "default" and headers.getheader("missing") is None
    assert headers.typeheader == "application/json"
    assert list(headers.headers) == [
        "Host: x\r\n",
        "X-Thing: a\r\n",
        "x-thing: b\r\n",
        "Content-Type: application/json\r\n",
    ]
    assert rest == b"BODY"


def test_a_bare_newline_ends_the_block_as_well():
    headers, rest = read(b"Host: x\n\n")
    assert headers.fields == [("Host", "x")] and rest == b"BODY"


def test_deleting_a_name_drops_every_field_of_it_and_a_missing_one_is_no_error():
    headers, _ = read(b"Content-Length: 5\r\nTransfer-Encoding: chunked\r\ncontent-length: 6\r\n\r\n")
    del headers["content-length"]
    del headers["not-there"]
    assert headers.fields == [("Transfer-Encoding", "chunked")] and headers.get("Content-Length") is None


def test_a_folded_line_continues_the_field_before_it_joined_by_a_space():
    headers, _ = read(b"Authorization: Bearer\r\n   abc\r\n\tdef\r\nHost: x\r\n\r\n")
    assert headers.get("authorization") == "Bearer abc def" and headers.get("host") == "x"


@pytest.mark.parametrize(
    "block",
    [b"Host: x\r\nnot a field\r\n\r\n", b": no name\r\n\r\n", b"Host : x\r\n\r\n", b" folded first\r\n\r\n"],
    ids=["no colon", "empty name", "space before the colon", "a fold with nothing before it"],
)
def test_a_line_that_is_not_a_field_makes_the_block_invalid(block):
    headers, _ = read(block)
    assert headers.status == "Invalid header line" and headers.fields == []


def test_the_limits_of_http_client_hold():
    at_limit, _ = read(b"X: " + b"a" * (MAX_HEADER_LINE_BYTES - 5) + b"\r\n\r\n")
    assert at_limit.status == "" and len(at_limit.get("x")) == MAX_HEADER_LINE_BYTES - 5
    too_long, _ = read(b"X: " + b"a" * MAX_HEADER_LINE_BYTES + b"\r\n\r\n")
    assert too_long.status == "Line too long"
    most, _ = read(b"".join(b"X-%d: v\r\n" % n for n in range(MAX_HEADER_LINES)) + b"\r\n")
    assert most.status == "" and len(most.fields) == MAX_HEADER_LINES
    too_many, _ = read(b"".join(b"X-%d: v\r\n" % n for n in range(MAX_HEADER_LINES + 1)) + b"\r\n")
    assert too_many.status == f"More than {MAX_HEADER_LINES} header lines"


def test_an_unfinished_block_ends_at_the_end_of_the_stream():
    headers, rest = read(b"Host: x\r\n", after=b"")
    assert headers.status == "" and headers.fields == [("Host", "x")] and rest == b""
