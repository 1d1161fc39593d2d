"""Parsing bodies: nesting, and strings no database can store, found wherever they are."""

import json

import pytest

from horde import errors
from horde.http import request_json
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


def _blocks(count: int) -> bytes:
    return json.dumps({"messages": [{"role": "user", "content": [{"type": "text", "text": ""}] * count}]}).encode()


def test_a_body_of_more_objects_and_arrays_than_the_limit_is_refused_before_it_is_parsed(monkeypatch):
    parsed = []
    monkeypatch.setattr(request_json.json, "loads", lambda raw: parsed.append(raw))
    with pytest.raises(errors.BadRequest) as refused:
        request_json.parse(_blocks(request_json.MAX_BODY_CONTAINERS - 3))  # 4 more: the body, messages, one, content
    assert refused.value.param is None
    assert str(request_json.MAX_BODY_CONTAINERS) in refused.value.message and parsed == []


def test_a_body_at_the_limit_is_parsed():
    body = request_json.parse(_blocks(request_json.MAX_BODY_CONTAINERS - 4))
    assert len(body["messages"][0]["content"]) == request_json.MAX_BODY_CONTAINERS - 4


def test_braces_inside_strings_do_not_count():
    text = '{"a": [1], "\\\\"{[": "x"}' * 10
    raw = json.dumps({"messages": [{"role": "user", "content": text}] * 4}).encode()
    assert raw.count(b"{") + raw.count(b"[") > 50
    assert request_json.containers(raw, limit=10) == 6  # the object, its list, four messages
    assert request_json.containers(raw, limit=10_000) == raw.count(b"{") + raw.count(b"[")  # the bound, as is


def test_a_real_client_s_large_body_stays_far_below_the_limit():
    """2,048 messages of content parts, with 24 tools carrying JSON schemas: what the limit must never refuse."""
    schema = {"type": "object", "properties": {f"p{n}": {"type": "string", "enum": ["a", "b"]} for n in range(20)}}
    tools = [{"name": f"tool{n}", "description": "d", "input_schema": schema} for n in range(24)]
    turn = {"role": "user", "content": [{"type": "text", "text": "hello", "cache_control": {"type": "ephemeral"}}]}
    raw = json.dumps({"model": "m", "tools": tools, "messages": [turn] * 2048}).encode()
    assert request_json.containers(raw, limit=request_json.MAX_BODY_CONTAINERS) < request_json.MAX_BODY_CONTAINERS / 5
    assert request_json.parse(raw)["model"] == "m"


def test_an_agent_session_at_the_message_limit_stays_below_the_limit():
    """1,024 turns of an agent: each a tool call (with its input) and the tool's result (with its content parts)."""
    call = {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Let me look."},
            {"type": "tool_use", "id": "t", "name": "Bash", "input": {"command": "ls"}},
        ],
    }
    result = {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "t", "content": [{"type": "text", "text": "a.py"}]}],
    }
    raw = json.dumps({"model": "m", "messages": [call, result] * 1024}).encode()
    assert request_json.containers(raw, limit=request_json.MAX_BODY_CONTAINERS) < request_json.MAX_BODY_CONTAINERS / 2
