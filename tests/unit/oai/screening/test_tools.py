"""Screening of tools, tool_choice, parallel_tool_calls and the payload size (horde/oai/screening/tools.py)."""

from __future__ import annotations

import pytest

from horde.oai.screening.tools import TOOLS_PAYLOAD_MAX_BYTES, tools_payload_bytes
from tests.support.screening import (
    BAD,
    CONFLICT,
    UNSUPPORTED,
    WEATHER_TOOL,
    assert_refused,
    function_tool,
    json_schema_format,
    make_body,
    screen,
)

# --- tools, tool_choice, parallel_tool_calls ------------------------------------------------------------


@pytest.mark.parametrize(
    "tools,code,param,message",
    [
        ("get_weather", BAD, "tools", None),
        (
            [function_tool(f"f{i}") for i in range(129)],
            UNSUPPORTED,
            "tools",
            "Invalid 'tools': array too long. Expected an array with maximum length 128, "
            "but got an array with length 129 instead.",
        ),
        (["get_weather"], BAD, "tools[0]", None),
        ([{"function": {"name": "f"}}], BAD, "tools[0].type", "Missing required parameter: 'tools[0].type'."),
        (
            [function_tool(), {"type": "custom", "custom": {"name": "g"}}],
            UNSUPPORTED,
            "tools[1].type",
            "Invalid value: 'custom'. Supported values are: 'function'.",
        ),
        ([{"type": "web_search"}], UNSUPPORTED, "tools[0].type", None),
        ([{"type": "function"}], BAD, "tools[0].function", "Missing required parameter: 'tools[0].function'."),
        ([{"type": "function", "function": "f"}], BAD, "tools[0].function", None),
        (
            [{"type": "function", "function": {"description": "x"}}],
            BAD,
            "tools[0].function.name",
            "Missing required parameter: 'tools[0].function.name'.",
        ),
        (
            [function_tool("get weather")],
            BAD,
            "tools[0].function.name",
            "Invalid 'tools[0].function.name': string does not match pattern. Expected a string that "
            "matches the pattern '^[a-zA-Z0-9_-]+$'.",
        ),
        (
            [function_tool("f" * 67)],
            BAD,
            "tools[0].function.name",
            "Invalid 'tools[0].function.name': string too long. Expected a string with maximum length 64, "
            "but got a string with length 67 instead.",
        ),
        ([function_tool("")], BAD, "tools[0].function.name", None),
        (
            [function_tool(None)],
            BAD,
            "tools[0].function.name",
            "Invalid type for 'tools[0].function.name': expected a string, but got null instead.",
        ),
        (
            [function_tool(parameters="object")],
            BAD,
            "tools[0].function.parameters",
            "Invalid type for 'tools[0].function.parameters': expected an object, but got a string instead.",
        ),
        ([function_tool(strict="yes")], BAD, "tools[0].function.strict", None),
        ([function_tool(description=["a"])], BAD, "tools[0].function.description", None),
        ([function_tool("f"), function_tool("g"), function_tool("f")], BAD, "tools[2].function.name", None),
    ],
)
def test_tools_refusals(tools, code, param, message):
    assert_refused(make_body(tools=tools), code, param, message)


def test_tools_keep_served_keys_and_forward_parameters_unchanged():
    parameters = {
        "type": "object",
        "properties": {"city": {"type": "string", "x-vendor": 1}},
        "required": ["city"],
        "$comment": "kept",
    }
    tool = {
        "type": "function",
        "cache_control": {"type": "ephemeral"},
        "function": {
            "name": "get_weather",
            "description": "Weather",
            "parameters": parameters,
            "strict": None,
            "examples": [1],
        },
    }
    native = screen(make_body(tools=[tool, function_tool("f_2-x", strict=False)])).native
    assert native["tools"] == [
        {"type": "function", "function": {"name": "get_weather", "description": "Weather", "parameters": parameters}},
        {"type": "function", "function": {"name": "f_2-x", "strict": False}},
    ]


def test_128_tools_are_accepted():
    tools = [function_tool(f"f{i}") for i in range(128)]
    assert len(screen(make_body(tools=tools)).native["tools"]) == 128


@pytest.mark.parametrize(
    "tool_choice,code,param,message",
    [
        ("any", BAD, "tool_choice", "Invalid value: 'any'. Supported values are: 'none', 'auto', and 'required'."),
        (5, BAD, "tool_choice", None),
        ({"type": "function", "function": {"name": "nope"}}, BAD, "tool_choice", None),
        (
            {"type": "allowed_tools", "allowed_tools": {"mode": "auto", "tools": []}},
            UNSUPPORTED,
            "tool_choice.type",
            None,
        ),
        ({"type": "custom", "custom": {"name": "get_weather"}}, UNSUPPORTED, "tool_choice.type", None),
        ({"function": {"name": "get_weather"}}, BAD, "tool_choice.type", None),
        ({"type": "function"}, BAD, "tool_choice.function", None),
        ({"type": "function", "function": {}}, BAD, "tool_choice.function.name", None),
        ({"type": "function", "function": {"name": 3}}, BAD, "tool_choice.function.name", None),
    ],
)
def test_tool_choice_refusals(tool_choice, code, param, message):
    assert_refused(make_body(tools=[WEATHER_TOOL], tool_choice=tool_choice), code, param, message)


@pytest.mark.parametrize(
    "keys,param",
    [
        ({"tool_choice": "auto"}, "tool_choice"),
        ({"tool_choice": "none"}, "tool_choice"),
        ({"tools": [], "tool_choice": "required"}, "tool_choice"),
        ({"tools": None, "tool_choice": {"type": "function", "function": {"name": "f"}}}, "tool_choice"),
        ({"parallel_tool_calls": False}, "parallel_tool_calls"),
        ({"tools": [], "parallel_tool_calls": True}, "parallel_tool_calls"),
    ],
)
def test_tool_options_without_tools_conflict(keys, param):
    assert_refused(
        make_body(**keys),
        CONFLICT,
        param,
        f"Invalid value for '{param}': '{param}' is only allowed when 'tools' are specified.",
    )


def test_parallel_tool_calls_must_be_a_boolean():
    assert_refused(make_body(tools=[WEATHER_TOOL], parallel_tool_calls="true"), BAD, "parallel_tool_calls")


def test_forced_tool_choice_drops_unknown_keys():
    choice = {"type": "function", "function": {"name": "get_weather", "strict": True}, "x": 1}
    native = screen(make_body(tools=[WEATHER_TOOL], tool_choice=choice, parallel_tool_calls=False)).native
    assert native["tool_choice"] == {"type": "function", "function": {"name": "get_weather"}}
    assert native["parallel_tool_calls"] is False


def test_tool_choice_none_sends_no_tool_definitions():
    native = screen(make_body(tools=[WEATHER_TOOL], tool_choice="none", parallel_tool_calls=True)).native
    assert not {"tools", "tool_choice", "parallel_tool_calls"} & set(native)


def test_tool_choice_none_still_validates_the_tools():
    assert_refused(make_body(tools=[function_tool("bad name")], tool_choice="none"), BAD, "tools[0].function.name")


# --- Payload size ---------------------------------------------------------------------------------------


def padded_tool(description_chars):
    return function_tool(description="d" * description_chars, parameters={"type": "object"})


def test_tools_payload_size_limit_is_inclusive():
    base = tools_payload_bytes([padded_tool(0)], "auto", {"type": "json_object"})
    room = TOOLS_PAYLOAD_MAX_BYTES - base
    at_limit = make_body(tools=[padded_tool(room)], tool_choice="auto", response_format={"type": "json_object"})
    assert screen(at_limit)
    over = make_body(tools=[padded_tool(room + 1)], tool_choice="auto", response_format={"type": "json_object"})
    error = assert_refused(over, UNSUPPORTED, "tools")
    assert str(TOOLS_PAYLOAD_MAX_BYTES) in error.message


def test_payload_size_counts_the_whole_payload_across_tools():
    tools = [padded_tool(70_000) for _ in range(4)]
    for index, tool in enumerate(tools):
        tool["function"]["name"] = f"f{index}"
    assert_refused(make_body(tools=tools), UNSUPPORTED, "tools")


def test_payload_size_is_reported_at_response_format_without_tools():
    schema = {"type": "object", "description": "x" * TOOLS_PAYLOAD_MAX_BYTES}
    assert_refused(make_body(response_format=json_schema_format(schema)), UNSUPPORTED, "response_format")


def test_payload_size_counts_what_is_forwarded_not_dropped_keys():
    tool = dict(function_tool(parameters={"type": "object"}), cache_control="x" * 300_000)
    assert screen(make_body(tools=[tool]))


def test_payload_size_counts_non_ascii_as_json_escapes():
    tool = function_tool(description="é" * 50_000)  # 6 bytes each as \u00e9
    assert_refused(make_body(tools=[tool]), UNSUPPORTED, "tools")
