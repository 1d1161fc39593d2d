"""Parsing bodies: nesting, and strings no database can store, found wherever they are."""

import json

import pytest

from horde import errors, request_json
from tests.support.fuzz import UNSTORABLE_STRINGS


def test_utf16_bodies_are_checked_too():
    raw = json.dumps([[[["\u0000"]]]]).encode("utf-16")
    with pytest.raises(errors.BadRequest) as refused:
        request_json.parse(raw)
    assert refused.value.param == "[0][0][0][0]"


@pytest.mark.parametrize("text", UNSTORABLE_STRINGS)
@pytest.mark.parametrize("ensure_ascii", [True, False])
def test_unstorable_strings_are_refused_with_their_path(text, ensure_ascii):
    raw = json.dumps({"messages": [{"role": "user", "content": ["ok", text]}]}, ensure_ascii=ensure_ascii)
    with pytest.raises(errors.BadRequest) as refused:
        request_json.parse(raw.encode("utf-8", "surrogatepass"))
    assert refused.value.param == "messages[0].content[1]"


def test_unstorable_keys_are_refused():
    with pytest.raises(errors.BadRequest) as refused:
        request_json.parse(json.dumps({"horde": {"a\u0000": 1}}).encode())
    assert refused.value.param == "horde.a\x00"


def test_valid_surrogate_pairs_and_escaped_backslashes_pass():
    body = {"content": "\U0001f600 \\u0000 \\ud800"}
    assert request_json.parse(json.dumps(body).encode()) == body
    assert request_json.parse(json.dumps(body, ensure_ascii=False).encode()) == body


def test_nesting_past_the_limit_is_refused():
    deep = json.dumps([[]] * 2)
    for _ in range(request_json.MAX_BODY_DEPTH):
        deep = f"[{deep}]"
    with pytest.raises(errors.BadRequest):
        request_json.parse(deep.encode())
