"""A POST /v1/responses body mapped onto a chat completions body, which the chat screening then checks.

Only the Responses API's own fields are checked here: which keys exist, the
shapes that differ from chat (tools, tool_choice, text.format, reasoning) and
the values the Horde cannot honour, each refused with a 400 naming the field.
Everything the two APIs share (messages, sampling ranges, tool schemas, the
horde object) is left to the chat screening, whose param paths are renamed
back to this API's names (messages -> input, max_tokens -> max_output_tokens).
What is accepted and not acted on (`client_metadata`, a
`reasoning.summary` other than `auto`, hosted tools) is named
(horde/oai/ignored.py); `max_output_tokens` above the Horde's ceiling is
lowered to it, as clients send their model's maximum.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from horde.oai.ignored import Ignored
from horde.oai.responses import tools as responses_tools
from horde.oai.responses.input_items import Opener, Resolver, input_messages
from horde.oai.screening.base import (
    BAD_REQUEST,
    CONFLICT,
    ScreeningError,
    invalid_choice,
    require_bool,
    require_list,
    require_object,
    require_string,
    same_json_value,
    unknown_parameter,
)
from horde.oai.screening.sampling import lowered_to_ceiling

#: Fields mapped onto the chat contract.
REQUEST_FIELDS = frozenset(
    {
        "model",
        "models",
        "input",
        "instructions",
        "tools",
        "tool_choice",
        "parallel_tool_calls",
        "text",
        "reasoning",
        "max_output_tokens",
        "temperature",
        "top_p",
        "stream",
        "store",
        "previous_response_id",
        "metadata",
        "user",
        "truncation",
        "include",
        "prompt_cache_key",
        "client_metadata",
        "horde",
        # The conversation's key (horde/oai/conversation.py): its turns go to the worker that holds its cache.
        "session_id",
        # Answered at once, then polled, streamed from any event and cancelled (horde/oai/responses/background.py).
        "background",
        # "auto", "default" or "flex" (horde/chat/tiers.py), screened as chat screens it.
        "service_tier",
    }
)
#: Fields accepted only at the value that changes nothing, as the chat front's DEFAULT_NO_OP_PARAMETERS.
DEFAULT_ONLY_FIELDS: dict[str, tuple] = {
    "top_logprobs": (0, None),
    "stream_options": (None,),
    "safety_identifier": (None,),
    "max_tool_calls": (None,),
    "conversation": (None,),
    "prompt": (None,),
}
#: A background response is kept to be polled. OpenAI refuses the pair; its exact words were not found recorded, these
#: are those of the OpenAI-compatible servers that copy the refusal (docs/reference/responses.md, Background).
BACKGROUND_WITHOUT_STORE = "background can only be used when `store` is true"
TEXT_FORMATS = ("text", "json_object", "json_schema")
TRUNCATION_MODES = ("auto", "disabled")
REASONING_SUMMARIES = ("auto", "concise", "detailed")
#: The summary the Horde serves: the worker's reasoning text, as it comes.
SERVED_SUMMARY = "auto"
#: The `include` values served: encrypted reasoning that the client sends back (horde/oai/sealing.py).
ENCRYPTED_REASONING = "reasoning.encrypted_content"
INCLUDE_VALUES = (ENCRYPTED_REASONING,)
TEXT_VERBOSITY_DEFAULT = "medium"
METADATA_MAX_KEYS = 16
METADATA_KEY_MAX_CHARS = 64
METADATA_VALUE_MAX_CHARS = 512
#: Chat screening's param prefixes and this API's names for them.
PARAM_NAMES = (
    ("messages", "input"),
    ("max_tokens", "max_output_tokens"),
    ("response_format", "text.format"),
    ("reasoning_effort", "reasoning.effort"),
)


@dataclass
class Mapped:
    """A Responses body as the chat contract takes it, with what the mapping named and how to answer it."""

    chat: dict
    #: The chat messages of this request's `input` (without instructions), as stored for a next turn.
    turn: list[dict]
    ignored: Ignored
    namespaces: responses_tools.Namespaces
    #: Whether reasoning items carry encrypted_content (include: reasoning.encrypted_content).
    sealed_reasoning: bool


def chat_body(
    body: dict, history: list[dict], open_sealed: Opener | None = None, resolve: Resolver | None = None
) -> Mapped:
    """The chat completions body for `body`, after `history` (the messages of previous_response_id).

    `open_sealed` reads back the encrypted_content of a reasoning item in `input`, `resolve` finds the stored
    item an item_reference names.
    """
    for key, value in body.items():
        if key in REQUEST_FIELDS:
            continue
        if key not in DEFAULT_ONLY_FIELDS:
            raise unknown_parameter(key)
        if not any(same_json_value(value, default) for default in DEFAULT_ONLY_FIELDS[key]):
            raise ScreeningError(
                f"Unsupported value for '{key}': the AI Horde does not serve it, and accepts only its default.",
                param=key,
            )
    body = {key: value for key, value in body.items() if key in REQUEST_FIELDS and value is not None}
    ignored = Ignored(token_param="max_output_tokens")
    chat: dict[str, Any] = {
        key: body[key]
        for key in (
            "model",
            "models",
            "temperature",
            "top_p",
            "user",
            "prompt_cache_key",
            "stream",
            "horde",
            "service_tier",
        )
        if key in body
    }
    if "max_output_tokens" in body:
        chat["max_tokens"] = lowered_to_ceiling(body["max_output_tokens"], "max_output_tokens", ignored)
    turn = this_turn(body, open_sealed, resolve)
    chat["messages"] = _instructions(body.get("instructions")) + history + turn
    served, namespaces = responses_tools.chat_tools(body.get("tools", []), ignored)
    if served:
        chat["tools"] = served
    if "parallel_tool_calls" in body:
        parallel = require_bool(body["parallel_tool_calls"], "parallel_tool_calls")
        if served:  # without a tool served it changes nothing
            chat["parallel_tool_calls"] = parallel
    if "tool_choice" in body:
        choice = responses_tools.chat_tool_choice(body["tool_choice"], served)
        if choice is not None:
            chat["tool_choice"] = choice
    if "text" in body:
        chat.update(_text(body["text"]))
    if "reasoning" in body:
        chat.update(_reasoning(body["reasoning"], ignored))
    if "client_metadata" in body:
        require_object(body["client_metadata"], "client_metadata")
        ignored.add("client_metadata")
    sealed = _include(body.get("include", []))
    if "truncation" in body:
        chat["horde"] = _truncation(body["truncation"], chat.get("horde"))
    for key in ("store", "stream", "background"):
        if key in body:
            require_bool(body[key], key)
    if body.get("background") and body.get("store") is False:
        raise ScreeningError(BACKGROUND_WITHOUT_STORE, code=CONFLICT, param="background")
    if "metadata" in body:
        check_metadata(body["metadata"])
    return Mapped(chat, turn, ignored, namespaces, sealed)


def this_turn(body: dict, open_sealed: Opener | None = None, resolve: Resolver | None = None) -> list[dict]:
    """The chat messages of this request's `input` (without instructions), as stored for a next turn."""
    if "input" not in body or body["input"] is None:
        raise ScreeningError("Missing required parameter: 'input'.", code=BAD_REQUEST, param="input")
    return input_messages(body["input"], open_sealed, resolve)


def renamed(error: ScreeningError, namespaces: responses_tools.Namespaces) -> ScreeningError:
    """A chat screening error with its param in this API's names."""
    if error.param:
        error.param = rename(error.param, namespaces)
    return error


def rename(param: str, namespaces: responses_tools.Namespaces) -> str:
    """A chat param path in this API's names; a tool's path is the body's (namespaces flatten them)."""
    for chat_name, name in PARAM_NAMES:
        if param == chat_name or param.startswith(chat_name + "[") or param.startswith(chat_name + "."):
            return name + param[len(chat_name) :]
    return namespaces.body_path(param)


def _include(value: Any) -> bool:
    """Whether `include` asks for encrypted reasoning; any other value is refused."""
    for index, item in enumerate(require_list(value, "include")):
        if item not in INCLUDE_VALUES:
            raise ScreeningError(
                f"Unsupported value for 'include[{index}]': {item!r}; the AI Horde serves "
                f"{', '.join(repr(value) for value in INCLUDE_VALUES)}.",
                param=f"include[{index}]",
            )
    return ENCRYPTED_REASONING in value


def _instructions(value: Any) -> list[dict]:
    if value is None:
        return []
    text = require_string(value, "instructions")
    return [{"role": "system", "content": text}] if text else []


def _text(value: Any) -> dict:
    text = require_object(value, "text")
    for key in text:
        if key not in ("format", "verbosity"):
            raise unknown_parameter(f"text.{key}")
    if text.get("verbosity") not in (None, TEXT_VERBOSITY_DEFAULT):
        raise ScreeningError(
            "Unsupported value for 'text.verbosity': the AI Horde serves only 'medium'.", param="text.verbosity"
        )
    if text.get("format") is None:
        return {}
    fmt = require_object(text["format"], "text.format")
    kind = fmt.get("type")
    if kind not in TEXT_FORMATS:
        raise invalid_choice("text.format.type", kind, TEXT_FORMATS)
    if kind == "text":
        return {}
    if kind == "json_object":
        return {"response_format": {"type": "json_object"}}
    json_schema = {key: value for key, value in fmt.items() if key != "type"}
    return {"response_format": {"type": "json_schema", "json_schema": json_schema}}


def _reasoning(value: Any, ignored: Ignored) -> dict:
    """reasoning.effort for the chat contract; a summary other than `auto` (the reasoning as it comes) is named."""
    reasoning = require_object(value, "reasoning")
    for key in reasoning:
        if key not in ("effort", "summary", "generate_summary"):
            raise unknown_parameter(f"reasoning.{key}")
    for key in ("summary", "generate_summary"):
        if reasoning.get(key) is not None and reasoning[key] not in REASONING_SUMMARIES:
            raise invalid_choice(f"reasoning.{key}", reasoning[key], REASONING_SUMMARIES)
        if reasoning.get(key) not in (None, SERVED_SUMMARY):
            ignored.add(f"reasoning.{key}")
    return {} if reasoning.get("effort") is None else {"reasoning_effort": reasoning["effort"]}


def _truncation(value: Any, horde: Any) -> Any:
    if value not in TRUNCATION_MODES:
        raise invalid_choice("truncation", value, TRUNCATION_MODES)
    horde = dict(horde) if isinstance(horde, dict) else horde
    if isinstance(horde, dict) and "context_fitting" in horde:
        raise ScreeningError(
            "Send either 'truncation' or 'horde.context_fitting', not both.", code=CONFLICT, param="truncation"
        )
    fitting = "truncate_oldest" if value == "auto" else "reject"
    return {**(horde or {}), "context_fitting": fitting} if horde is None or isinstance(horde, dict) else horde


def check_metadata(value: Any) -> None:
    metadata = require_object(value, "metadata")
    if len(metadata) > METADATA_MAX_KEYS:
        raise ScreeningError(
            f"Invalid 'metadata': at most {METADATA_MAX_KEYS} keys.", code=BAD_REQUEST, param="metadata"
        )
    for key, item in metadata.items():
        if len(key) > METADATA_KEY_MAX_CHARS or not isinstance(item, str) or len(item) > METADATA_VALUE_MAX_CHARS:
            raise ScreeningError(
                f"Invalid 'metadata.{key}': keys are strings of at most {METADATA_KEY_MAX_CHARS} characters and "
                f"values strings of at most {METADATA_VALUE_MAX_CHARS}.",
                code=BAD_REQUEST,
                param=f"metadata.{key}",
            )
