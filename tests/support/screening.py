"""Helpers of the screening tests (tests/unit/oai/screening/): bodies, refusals and the shapes they reuse."""

from __future__ import annotations

import pytest

from horde.oai.screening import ScreenedRequest, ScreeningError, screen_chat_request

UNSUPPORTED = "UnsupportedChatParameter"
BAD = "BadRequest"
CONFLICT = "ChatRequestConflict"

USER_HI = {"role": "user", "content": "Hi"}
WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather of a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}


def make_body(**keys):
    body = {"model": "koboldcpp/tiny", "messages": [dict(USER_HI)]}
    body.update(keys)
    return body


def screen(body) -> ScreenedRequest:
    return screen_chat_request(body)


def refusal(body) -> ScreeningError:
    with pytest.raises(ScreeningError) as info:
        screen_chat_request(body)
    return info.value


def assert_refused(body, code, param, message=None, *, status=400, contains=None):
    error = refusal(body)
    assert (error.status, error.code, error.param) == (status, code, param), error
    if message is not None:
        assert error.message == message
    for fragment in contains or ():
        assert fragment in error.message, error.message
    return error


def messages_of(*messages):
    return make_body(messages=list(messages))


def tool_round(call_ids=("call_1",)):
    """An assistant message calling get_weather once per id."""
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": call_id, "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}
            for call_id in call_ids
        ],
    }


def tool_answer(call_id, content="sunny"):
    return {"role": "tool", "tool_call_id": call_id, "content": content}


def nested_properties_schema(levels, *, strict_ready=False):
    """An object schema whose innermost {"type": "string"} sits ``levels`` steps below the root."""
    schema = {"type": "string"}
    for _ in range(levels):
        schema = {"type": "object", "properties": {"a": schema}}
        if strict_ready:
            schema.update(required=["a"], additionalProperties=False)
    return schema


def function_tool(name="get_weather", **function_keys):
    return {"type": "function", "function": {"name": name, **function_keys}}


def json_schema_format(schema, *, name="answer", strict=None, **extra):
    json_schema = {"name": name, "schema": schema, **extra}
    if strict is not None:
        json_schema["strict"] = strict
    return {"type": "json_schema", "json_schema": json_schema}


STRICT_OK = {
    "type": "object",
    "additionalProperties": False,
    "required": ["a", "b"],
    "properties": {"a": {"type": ["string", "null"]}, "b": {"type": "array", "items": {"$ref": "#/$defs/item"}}},
    "$defs": {
        "item": {
            "type": "object",
            "additionalProperties": False,
            "required": ["x"],
            "properties": {"x": {"type": "integer"}},
        }
    },
}
