"""A POST /v1/messages body (Anthropic's Messages API) mapped onto a chat completions body.

The chat screening then checks what both share (sampling ranges, tool
schemas, image URLs, sizes), and its param paths are renamed to this API's
(max_tokens stays, stop becomes stop_sequences). Unknown fields are refused,
as Anthropic refuses them. What is accepted and not acted on (`cache_control`,
`metadata.user_id`, a `context_management` edit that keeps everything) is
named (horde/oai/ignored.py). `max_tokens` is an upper bound, as clients send
their model's maximum: above the Horde's ceiling it is lowered to it (and
admission lowers it to the online workers' lengths), and a thinking budget
that no longer fits below it is lowered with it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from horde.oai.ignored import Ignored
from horde.oai.messages import context_edits
from horde.oai.messages.content import CACHE_CONTROL, chat_messages, system_messages
from horde.oai.messages.thinking import screen_output_config, screen_thinking
from horde.oai.screening.base import (
    BAD_REQUEST,
    ScreeningError,
    is_number,
    require_bool,
    require_list,
    require_object,
    require_string,
)
from horde.oai.screening.sampling import lowered_to_ceiling

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
        "context_management",
        "output_config",
        "horde",
    }
)
COUNT_FIELDS = frozenset(
    {"model", "system", "messages", "tools", "tool_choice", "thinking", "context_management", "output_config"}
)
TOOL_KEYS = frozenset({"name", "description", "input_schema", "type", "cache_control"})
TOOL_CHOICES = ("auto", "any", "tool", "none")
#: Anthropic's temperature range is 0 to 1.
TEMPERATURE_MAX = 1.0
PARAM_NAMES = (
    ("stop", "stop_sequences"),
    ("reasoning_effort", "thinking"),
    ("user", "metadata.user_id"),
    ("response_format.json_schema", "output_config.format"),
    ("response_format", "output_config.format"),
)


@dataclass
class Mapped:
    """A Messages body as the chat contract takes it, with what the mapping itself named and carried out."""

    chat: dict
    #: Whether thinking blocks come back (thinking on, and not display: omitted).
    thinking: bool
    ignored: Ignored = field(default_factory=Ignored)
    #: The context_management edits applied, as Anthropic reports them; None without context_management.
    applied_edits: list[dict] | None = None
    #: Whether chat's reasoning_effort is only a hint (`output_config.effort` without thinking enabled, as Claude
    #: Code sends it beside adaptive thinking for any model): the call drops it, named, when no worker reasons.
    effort_hint: bool = False


def chat_body(body: Any, *, counting: bool = False) -> Mapped:
    """The chat body of a Messages body, and what the mapping named, lowered and carried out."""
    if not isinstance(body, dict):
        raise ScreeningError("The request body must be a JSON object.", code=BAD_REQUEST)
    fields = COUNT_FIELDS if counting else CREATE_FIELDS
    for key in body:
        if key not in fields:
            raise ScreeningError(f"{key}: Extra inputs are not permitted", param=key)
    if "model" not in body:
        raise ScreeningError("model: Field required", code=BAD_REQUEST, param="model")
    ignored = Ignored()
    chat: dict[str, Any] = {"model": body["model"]}
    if not counting:
        if "max_tokens" not in body:
            raise ScreeningError("max_tokens: Field required", code=BAD_REQUEST, param="max_tokens")
        chat["max_tokens"] = lowered_to_ceiling(body["max_tokens"], "max_tokens", ignored)
    edits = context_edits.screen(body["context_management"]) if body.get("context_management") is not None else None
    chat["messages"] = system_messages(body.get("system"), ignored) + chat_messages(body.get("messages"), ignored)
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
        chat["tools"] = _tools(body["tools"], ignored)
    if body.get("tool_choice") is not None:
        chat.update(_tool_choice(body["tool_choice"], bool(body.get("tools"))))
    thinking = screen_thinking(body.get("thinking"), chat.get("max_tokens"), ignored)
    output = screen_output_config(body["output_config"]) if body.get("output_config") is not None else {}
    effort = output.pop("reasoning_effort", thinking.effort)
    if effort is not None:
        chat["reasoning_effort"] = effort
    chat.update(output)
    shown = thinking.on and thinking.shown
    horde = chat.get("horde", {})
    if isinstance(horde, dict) and "include_reasoning" not in horde:  # thinking blocks only when thinking is on
        chat["horde"] = {**horde, "include_reasoning": shown}
    applied = None
    if edits is not None:
        applied = context_edits.apply(edits, body, chat["messages"], chat.get("tools"), ignored)
    return Mapped(chat, shown, ignored, applied, effort_hint=effort is not None and thinking.effort is None)


def renamed(error: ScreeningError) -> ScreeningError:
    """A chat screening error with its param in this API's names."""
    if error.param:
        error.param = rename(error.param)
    return error


def rename(param: str) -> str:
    """A chat param path in this API's names."""
    for chat_name, name in PARAM_NAMES:
        if param == chat_name or param.startswith((chat_name + "[", chat_name + ".")):
            param = name + param[len(chat_name) :]
            break
    if param.startswith("tools[") and ".function.parameters" in param:
        return param.replace(".function.parameters", ".input_schema", 1)
    if param.startswith("tools[") and ".function." in param:
        return param.replace(".function.", ".", 1)
    return param


def _metadata(value: Any) -> dict:
    metadata = require_object(value, "metadata")
    for key in metadata:
        if key != "user_id":
            raise ScreeningError(f"metadata.{key}: Extra inputs are not permitted", param=f"metadata.{key}")
    return {} if metadata.get("user_id") is None else {"user": require_string(metadata["user_id"], "metadata.user_id")}


def _tools(value: Any, ignored: Ignored) -> list[dict]:
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
        if tool.get(CACHE_CONTROL) is not None:
            ignored.add(f"{path}.{CACHE_CONTROL}")
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
