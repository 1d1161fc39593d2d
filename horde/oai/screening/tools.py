"""Screening of tools, tool_choice and parallel_tool_calls, and of their payload size.

Unknown keys on a tools entry, its function object and the tool_choice object
are dropped, as OpenAI drops them, and named (horde/oai/ignored.py): a key of a
tool's definition is a setting the Horde does not act on. A function's
parameters schema is client data, forwarded unchanged after the depth check
(and OpenAI's strict rules when the function sets strict: true).
"""

from __future__ import annotations

import json
from typing import Any

from horde.oai.ignored import Ignored
from horde.oai.screening.base import (
    BAD_REQUEST,
    CONFLICT,
    UNSUPPORTED,
    ScreeningError,
    array_too_long,
    bad_type,
    invalid_choice,
    missing,
    require_bool,
    require_list,
    require_object,
    require_string,
)
from horde.oai.screening.fields import (
    EXCLUDE,
    FixedSchema,
    FunctionName,
    JsonObject,
    StrictBool,
    StrictString,
    load_fixed_object,
)
from horde.oai.screening.json_schemas import check_schema

TOOLS_MAX_COUNT = 128
TOOLS_PAYLOAD_MAX_BYTES = 262_144
TOOL_CHOICE_MODES = ("none", "auto", "required")
TOOL_TYPES = ("function",)
TOOL_ENTRY_KEYS = ("type", "function")
TOOL_CHOICE_KEYS = ("type", "function")


class ToolFunctionSchema(FixedSchema):
    """tools[i].function: served keys validated, other keys dropped."""

    class Meta:
        unknown = EXCLUDE

    name = FunctionName(required=True, allow_none=False)
    description = StrictString()
    parameters = JsonObject()
    strict = StrictBool()


_TOOL_FUNCTION = ToolFunctionSchema()  # reused: loading keeps no state on the schema


def screen_tools(value: Any, ignored: Ignored) -> list[dict]:
    """The native tools list from a non-empty ``tools`` value; the keys it drops are named in `ignored`."""
    tools = require_list(value, "tools")
    if len(tools) > TOOLS_MAX_COUNT:
        raise array_too_long("tools", TOOLS_MAX_COUNT, len(tools))
    screened = [_screen_tool(entry, f"tools[{index}]", ignored) for index, entry in enumerate(tools)]
    _refuse_duplicate_names(screened)
    return screened


def _screen_tool(entry: Any, path: str, ignored: Ignored) -> dict:
    entry = require_object(entry, path)
    _require_function_type(entry, path)
    if "function" not in entry:
        raise missing(f"{path}.function")
    function_path = f"{path}.function"
    sent = require_object(entry["function"], function_path)
    function = load_fixed_object(_TOOL_FUNCTION, sent, function_path)
    ignored.add_keys(entry, TOOL_ENTRY_KEYS, path)
    ignored.add_keys(sent, _TOOL_FUNCTION.fields, function_path)
    if "parameters" in function:
        check_schema(
            function["parameters"],
            strict=function.get("strict") is True,
            owner=f"function '{function['name']}'",
            param=f"{function_path}.parameters",
        )
    return {"type": "function", "function": function}


def _require_function_type(entry: dict, path: str) -> None:
    if "type" not in entry:
        raise missing(f"{path}.type")
    kind = require_string(entry["type"], f"{path}.type")
    if kind not in TOOL_TYPES:
        raise invalid_choice(f"{path}.type", kind, TOOL_TYPES, code=UNSUPPORTED)


def _refuse_duplicate_names(tools: list[dict]) -> None:
    first_index: dict[str, int] = {}
    for index, tool in enumerate(tools):
        name = tool["function"]["name"]
        if name in first_index:
            param = f"tools[{index}].function.name"
            raise ScreeningError(
                f"Invalid '{param}': the function name '{name}' is already used by "
                f"tools[{first_index[name]}]; function names must be unique.",
                code=BAD_REQUEST,
                param=param,
            )
        first_index[name] = index


def screen_tool_choice(value: Any, ignored: Ignored) -> str | dict:
    """none, auto, required, or the object forcing one function (other keys dropped, and named)."""
    if isinstance(value, str):
        if value not in TOOL_CHOICE_MODES:
            raise invalid_choice("tool_choice", value, TOOL_CHOICE_MODES)
        return value
    if not isinstance(value, dict):
        raise bad_type("tool_choice", "a string or an object", value)
    _require_function_type(value, "tool_choice")
    if "function" not in value:
        raise missing("tool_choice.function")
    function = require_object(value["function"], "tool_choice.function")
    if "name" not in function:
        raise missing("tool_choice.function.name")
    name = require_string(function["name"], "tool_choice.function.name")
    ignored.add_keys(value, TOOL_CHOICE_KEYS, "tool_choice")
    ignored.add_keys(function, ("name",), "tool_choice.function")
    return {"type": "function", "function": {"name": name}}


def screen_parallel_tool_calls(value: Any) -> bool:
    return require_bool(value, "parallel_tool_calls")


def check_tool_options(tools: list[dict], tool_choice: Any, parallel_tool_calls: Any) -> None:
    """tool_choice and parallel_tool_calls need tools; a forced function must be one of them."""
    if not tools:
        for key, value in (("tool_choice", tool_choice), ("parallel_tool_calls", parallel_tool_calls)):
            if value is not None:
                raise ScreeningError(
                    f"Invalid value for '{key}': '{key}' is only allowed when 'tools' are specified.",
                    code=CONFLICT,
                    param=key,
                )
        return
    if isinstance(tool_choice, dict):
        name = tool_choice["function"]["name"]
        if name not in {tool["function"]["name"] for tool in tools}:
            raise ScreeningError(
                f"Invalid value for 'tool_choice': the function '{name}' is not defined in 'tools'.",
                code=BAD_REQUEST,
                param="tool_choice",
            )


def tools_payload_bytes(tools: Any, tool_choice: Any, response_format: Any) -> int:
    """Bytes of the compact JSON of each value present, summed (json.dumps defaults otherwise)."""
    return sum(
        len(json.dumps(value, separators=(",", ":")))
        for value in (tools, tool_choice, response_format)
        if value is not None
    )


def check_tools_payload_size(tools: Any, tool_choice: Any, response_format: Any) -> None:
    param = "tools" if tools else "response_format"
    try:
        size = tools_payload_bytes(tools, tool_choice, response_format)
    except (RecursionError, ValueError):
        raise ScreeningError(
            f"Invalid '{param}': the value is nested too deeply to be encoded as JSON.", code=UNSUPPORTED, param=param
        ) from None
    if size > TOOLS_PAYLOAD_MAX_BYTES:
        raise ScreeningError(
            f"The compact JSON of 'tools', 'tool_choice' and 'response_format' takes {size} bytes, "
            f"above the AI Horde's limit of {TOOLS_PAYLOAD_MAX_BYTES} bytes (256 KiB).",
            code=UNSUPPORTED,
            param=param,
        )


def native_tool_keys(tools: list[dict], tool_choice: Any, parallel_tool_calls: Any) -> dict:
    """The native keys for tools; none of them under tool_choice "none"."""
    if not tools or tool_choice == "none":
        return {}
    native: dict[str, Any] = {"tools": tools}
    if tool_choice is not None:
        native["tool_choice"] = tool_choice
    if parallel_tool_calls is not None:
        native["parallel_tool_calls"] = parallel_tool_calls
    return native
