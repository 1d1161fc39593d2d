"""A POST /v1/messages body (Anthropic's Messages API) mapped onto a chat completions body.

The chat screening then checks what both share (sampling ranges, tool
schemas, image URLs, sizes), and its param paths are renamed to this API's
(max_tokens stays, stop becomes stop_sequences). Unknown fields are refused,
as Anthropic refuses them.
"""

from __future__ import annotations

from typing import Any

from horde.oai.messages.content import chat_messages, system_messages
from horde.oai.screening.base import (
    BAD_REQUEST,
    ScreeningError,
    is_number,
    require_bool,
    require_list,
    require_object,
    require_string,
)

CREATE_FIELDS = frozenset(
    {
        "model",
        "max_tokens",
        "system",
        "messages",
        "tools",
        "tool_choice",
        "stop_sequences",
        "temperature",
        "top_p",
        "stream",
        "thinking",
        "metadata",
        "horde",
    }
)
COUNT_FIELDS = frozenset({"model", "system", "messages", "tools", "tool_choice", "thinking"})
TOOL_KEYS = frozenset({"name", "description", "input_schema", "type", "cache_control"})
TOOL_CHOICES = ("auto", "any", "tool", "none")
#: Anthropic's temperature range is 0 to 1.
TEMPERATURE_MAX = 1.0
#: thinking.budget_tokens -> reasoning_effort: below the first bound low, below the second medium, else high.
EFFORT_BOUNDS_TOKENS = (4096, 16384)
THINKING_BUDGET_MIN_TOKENS = 1024
PARAM_NAMES = (("stop", "stop_sequences"), ("reasoning_effort", "thinking"), ("user", "metadata.user_id"))


def chat_body(body: Any, *, counting: bool = False) -> tuple[dict, bool]:
    """The chat body, and whether thinking is on (then reasoning comes back as thinking blocks)."""
    if not isinstance(body, dict):
        raise ScreeningError("The request body must be a JSON object.", code=BAD_REQUEST)
    fields = COUNT_FIELDS if counting else CREATE_FIELDS
    for key in body:
        if key not in fields:
            raise ScreeningError(f"{key}: Extra inputs are not permitted", param=key)
    if "model" not in body:
        raise ScreeningError("model: Field required", code=BAD_REQUEST, param="model")
    chat: dict[str, Any] = {"model": body["model"]}
    if not counting:
        if "max_tokens" not in body:
            raise ScreeningError("max_tokens: Field required", code=BAD_REQUEST, param="max_tokens")
        chat["max_tokens"] = body["max_tokens"]
    chat["messages"] = system_messages(body.get("system")) + chat_messages(body.get("messages"))
    for key in ("top_p", "horde"):
        if body.get(key) is not None:
            chat[key] = body[key]
    if body.get("temperature") is not None:
        temperature = body["temperature"]
        if is_number(temperature) and not 0 <= temperature <= TEMPERATURE_MAX:
            raise ScreeningError(
                "temperature: Input should be less than or equal to 1", code=BAD_REQUEST, param="temperature"
            )
        chat["temperature"] = temperature
    if body.get("stop_sequences") is not None:
        chat["stop"] = require_list(body["stop_sequences"], "stop_sequences")
    if body.get("stream") is not None:
        chat["stream"] = require_bool(body["stream"], "stream")
    if body.get("metadata") is not None:
        chat.update(_metadata(body["metadata"]))
    if body.get("tools"):
        chat["tools"] = _tools(body["tools"])
    if body.get("tool_choice") is not None:
        chat.update(_tool_choice(body["tool_choice"], bool(body.get("tools"))))
    thinking = _thinking(body.get("thinking"))
    if thinking is not None:
        chat["reasoning_effort"] = thinking
    horde = chat.get("horde", {})
    if isinstance(horde, dict) and "include_reasoning" not in horde:  # thinking blocks only when thinking is on
        chat["horde"] = {**horde, "include_reasoning": thinking is not None}
    return chat, thinking is not None


def renamed(error: ScreeningError) -> ScreeningError:
    """A chat screening error with its param in this API's names."""
    param = error.param or ""
    for chat_name, name in PARAM_NAMES:
        if param == chat_name or param.startswith(chat_name + "["):
            error.param = name + param[len(chat_name) :]
            break
    if error.param and error.param.startswith("tools[") and ".function.parameters" in error.param:
        error.param = error.param.replace(".function.parameters", ".input_schema", 1)
    elif error.param and error.param.startswith("tools[") and ".function." in error.param:
        error.param = error.param.replace(".function.", ".", 1)
    return error


def _metadata(value: Any) -> dict:
    metadata = require_object(value, "metadata")
    for key in metadata:
        if key != "user_id":
            raise ScreeningError(f"metadata.{key}: Extra inputs are not permitted", param=f"metadata.{key}")
    return {} if metadata.get("user_id") is None else {"user": require_string(metadata["user_id"], "metadata.user_id")}


def _tools(value: Any) -> list[dict]:
    tools = []
    for index, entry in enumerate(require_list(value, "tools")):
        path = f"tools[{index}]"
        tool = require_object(entry, path)
        if tool.get("type") not in (None, "custom"):
            raise ScreeningError(
                f"{path}.type: the AI Horde serves only custom (client) tools, not {tool['type']!r}.",
                param=f"{path}.type",
            )
        for key in tool:
            if key not in TOOL_KEYS:
                raise ScreeningError(f"{path}.{key}: Extra inputs are not permitted", param=f"{path}.{key}")
        if "input_schema" not in tool:
            raise ScreeningError(f"{path}.input_schema: Field required", code=BAD_REQUEST, param=f"{path}.input_schema")
        function = {"name": tool.get("name"), "parameters": tool["input_schema"]}
        if tool.get("description") is not None:
            function["description"] = tool["description"]
        tools.append({"type": "function", "function": function})
    return tools


def _tool_choice(value: Any, has_tools: bool) -> dict:
    choice = require_object(value, "tool_choice")
    kind = choice.get("type")
    if kind not in TOOL_CHOICES:
        raise ScreeningError(
            f"tool_choice.type: Input should be {', '.join(TOOL_CHOICES)}", code=BAD_REQUEST, param="tool_choice.type"
        )
    for key in choice:
        if key not in ("type", "name", "disable_parallel_tool_use"):
            raise ScreeningError(f"tool_choice.{key}: Extra inputs are not permitted", param=f"tool_choice.{key}")
    if not has_tools:  # the chat contract refuses tool_choice without tools; Anthropic accepts it
        return {}
    chat: dict[str, Any] = {}
    if kind == "tool":
        chat["tool_choice"] = {
            "type": "function",
            "function": {"name": require_string(choice.get("name"), "tool_choice.name")},
        }
    else:
        chat["tool_choice"] = {"auto": "auto", "any": "required", "none": "none"}[kind]
    if choice.get("disable_parallel_tool_use") is not None and kind != "none":
        chat["parallel_tool_calls"] = not require_bool(
            choice["disable_parallel_tool_use"], "tool_choice.disable_parallel_tool_use"
        )
    return chat


def _thinking(value: Any) -> str | None:
    """The reasoning_effort for `thinking`; None when disabled or absent."""
    if value is None:
        return None
    thinking = require_object(value, "thinking")
    kind = thinking.get("type")
    if kind == "disabled":
        return None
    if kind != "enabled":
        raise ScreeningError(
            "thinking.type: Input should be 'enabled' or 'disabled'", code=BAD_REQUEST, param="thinking.type"
        )
    for key in thinking:
        if key not in ("type", "budget_tokens"):
            raise ScreeningError(f"thinking.{key}: Extra inputs are not permitted", param=f"thinking.{key}")
    budget = thinking.get("budget_tokens")
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < THINKING_BUDGET_MIN_TOKENS:
        raise ScreeningError(
            f"thinking.budget_tokens: Input should be an integer of at least {THINKING_BUDGET_MIN_TOKENS}",
            code=BAD_REQUEST,
            param="thinking.budget_tokens",
        )
    low, medium = EFFORT_BOUNDS_TOKENS
    return "low" if budget < low else "medium" if budget < medium else "high"
