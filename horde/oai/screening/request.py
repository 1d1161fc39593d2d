"""Screening of a POST /v1/chat/completions body, before anything else happens.

screen_chat_request() turns the parsed JSON body into the native request or
raises ScreeningError with the status, code, param and message to report
(docs/decisions/0001-route-by-declared-support.md).
Nothing here raises anything else, whatever JSON it is given.

Choices where the specification is silent:

- An unknown key is refused with OpenAI's newer wording, ``Unknown parameter:
  'logit_bias'.``, with the key as param. The classic wording ("Unrecognized
  request argument supplied: ...") comes with param null, and the front always
  reports the key's path.
- The first failure is reported, in this order: the body's type; top-level keys
  in the body's order (unknown keys, and the default table's keys at another
  value); model or models; messages; n, the token limits, the sampling values,
  seed, stop, reasoning_effort and user; stream and stream_options; tools,
  tool_choice, parallel_tool_calls, response_format and their payload size; the
  horde object; the openai_guards check.
- A key of the request model sent as null counts as omitted (OpenAI's
  specification makes them nullable), except response_format and horde, which
  must be objects. Keys only in the default table accept exactly their listed
  defaults, with JSON types kept apart (top_logprobs false is refused).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from horde.http.contract import MAX_MODELS_PER_REQUEST
from horde.oai import conversation
from horde.oai.ignored import Ignored
from horde.oai.screening.base import (
    BAD_REQUEST,
    CONFLICT,
    MODEL_NOT_FOUND,
    STATUS_NOT_FOUND,
    UNSUPPORTED,
    ScreeningError,
    array_too_long,
    empty_string,
    json_type_name,
    missing,
    require_list,
    require_string,
    same_json_value,
    unknown_parameter,
)
from horde.oai.screening.formats import screen_response_format
from horde.oai.screening.horde_options import SCREENING_ONLY_OPTIONS, screen_horde_options
from horde.oai.screening.messages import mentions_word, screen_messages
from horde.oai.screening.sampling import (
    SAMPLING_RANGES,
    screen_max_tokens,
    screen_n,
    screen_reasoning_effort,
    screen_sampling_value,
    screen_seed,
    screen_stop,
    screen_stream,
    screen_user,
)
from horde.oai.screening.tools import (
    check_tool_options,
    check_tools_payload_size,
    native_tool_keys,
    screen_parallel_tool_calls,
    screen_tool_choice,
    screen_tools,
)

REQUEST_FIELDS = frozenset(
    {
        "model",
        "models",
        "messages",
        "max_tokens",
        "max_completion_tokens",
        "temperature",
        "top_p",
        "frequency_penalty",
        "presence_penalty",
        "seed",
        "stop",
        "n",
        "stream",
        "stream_options",
        "tools",
        "tool_choice",
        "parallel_tool_calls",
        "response_format",
        "reasoning_effort",
        "user",
        "prompt_cache_key",
        "horde",
        # The conversation's key (horde/oai/conversation.py): its turns go to the worker that holds its cache.
        "session_id",
    }
)

# The closed table: key -> the default values accepted and dropped. Stock clients
# send these unprompted; any other value of a key only in this table is refused.
DEFAULT_NO_OP_PARAMETERS: dict[str, tuple] = {
    "tools": ([], None),
    "tool_choice": (None,),
    "parallel_tool_calls": (None,),
    "response_format": ({"type": "text"},),
    "logprobs": (False,),
    "top_logprobs": (0,),
    "store": (False,),
    "service_tier": ("auto", "default"),
}

#: Values of a table key that are not its default and that the Horde acts on: `service_tier: "flex"` (cheaper,
#: behind interactive requests: horde/chat/tiers.py).
ACTED_ON_VALUES: dict[str, tuple] = {"service_tier": ("flex",)}

# Request fields whose null is an error rather than an omission.
_NULL_REFUSED_FIELDS = frozenset({"response_format", "horde"})

MODELS_MAX_COUNT = MAX_MODELS_PER_REQUEST
MODEL_VARIANT_SEPARATOR = ":"
JSON_MODE_WORD = "json"


@dataclass
class ScreenedRequest:
    native: dict
    stream: bool
    include_usage: bool
    include_reasoning: bool
    model_param: str
    #: What the body asked for that the Horde accepts without acting on it, or lowered (horde/oai/ignored.py).
    ignored: Ignored = field(default_factory=Ignored)
    #: "default", or "flex" when the body asked for it (horde/chat/tiers.py).
    service_tier: str = "default"


def screen_chat_request(body: Any) -> ScreenedRequest:
    """Screen a parsed request body; raise ScreeningError on the first failure."""
    if not isinstance(body, dict):
        raise ScreeningError(
            f"Invalid type for the request body: expected an object, but got {json_type_name(body)} instead.",
            code=BAD_REQUEST,
            param=None,
        )
    _screen_top_level_keys(body)
    body = _without_omitted(body)
    only_completion_limit = "max_completion_tokens" in body and "max_tokens" not in body
    ignored = Ignored(token_param="max_completion_tokens" if only_completion_limit else "max_tokens")
    models, model_param = _screen_models(body)
    native: dict[str, Any] = {"models": models, "messages": screen_messages(body.get("messages"), ignored)}
    native.update(_screen_scalars(body, ignored))
    stream, include_usage = screen_stream(body)
    native.update(_screen_capabilities(body, ignored))
    options = screen_horde_options(body)
    _check_openai_guards(native, options["openai_guards"])
    native.update({key: value for key, value in options.items() if key not in SCREENING_ONLY_OPTIONS})
    return ScreenedRequest(
        native=native,
        stream=stream,
        include_usage=include_usage,
        include_reasoning=options["include_reasoning"],
        model_param=model_param,
        ignored=ignored,
        service_tier="flex" if body.get("service_tier") == "flex" else "default",
    )


def screen_models(body: dict) -> tuple[list[str], str]:
    """`model` or `models`, as /v1/chat/completions takes them; /v1/completions shares the rule."""
    return _screen_models(body)


def is_default_no_op(key: str, value: Any) -> bool:
    """Whether ``key`` holds one of its defaults from DEFAULT_NO_OP_PARAMETERS."""
    return any(same_json_value(value, default) for default in DEFAULT_NO_OP_PARAMETERS.get(key, ()))


def _screen_top_level_keys(body: dict) -> None:
    for key, value in body.items():
        if key in REQUEST_FIELDS:
            continue
        if key not in DEFAULT_NO_OP_PARAMETERS:
            raise unknown_parameter(key)
        acted_on = ACTED_ON_VALUES.get(key, ())
        if not is_default_no_op(key, value) and not any(same_json_value(value, known) for known in acted_on):
            defaults = " or ".join(json.dumps(default) for default in DEFAULT_NO_OP_PARAMETERS[key])
            also = f", or at {' or '.join(json.dumps(known) for known in acted_on)}" if acted_on else ""
            raise ScreeningError(
                f"Unsupported value for '{key}': the AI Horde accepts it only at its default "
                f"({defaults}), which it drops{also}.",
                code=UNSUPPORTED,
                param=key,
            )


def _without_omitted(body: dict) -> dict:
    """The body without keys at their no-op default, or null where null means omitted."""
    return {
        key: value
        for key, value in body.items()
        if not is_default_no_op(key, value) and (value is not None or key in _NULL_REFUSED_FIELDS)
    }


def _screen_models(body: dict) -> tuple[list[str], str]:
    if "model" in body and "models" in body:
        raise ScreeningError("Send either 'model' or 'models', not both.", code=CONFLICT, param="models")
    if "models" in body:
        return _screen_model_list(body["models"]), "models"
    if "model" not in body:
        raise missing("model")
    model = require_string(body["model"], "model")
    if not model:
        raise empty_string("model")
    _refuse_variant(model, "model")
    return [model], "model"


def _screen_model_list(value: Any) -> list[str]:
    models = require_list(value, "models")
    if not models:
        raise ScreeningError(
            "Invalid 'models': empty array. Expected an array with minimum length 1, but got an empty array instead.",
            code=UNSUPPORTED,
            param="models",
        )
    if len(models) > MODELS_MAX_COUNT:
        raise array_too_long("models", MODELS_MAX_COUNT, len(models))
    for index, model in enumerate(models):
        if not isinstance(model, str) or not model:
            got = "an empty string" if model == "" else json_type_name(model)
            raise ScreeningError(
                f"Invalid 'models[{index}]': expected a non-empty model id string, but got {got} instead.",
                code=UNSUPPORTED,
                param="models",
            )
    for index, model in enumerate(models):
        _refuse_variant(model, f"models[{index}]")
    return list(models)


def _refuse_variant(model: str, param: str) -> None:
    if MODEL_VARIANT_SEPARATOR in model:
        raise ScreeningError(
            f"The model `{model}` does not exist or you do not have access to it.",
            status=STATUS_NOT_FOUND,
            code=MODEL_NOT_FOUND,
            param=param,
        )


def _screen_scalars(body: dict, ignored: Ignored) -> dict:
    native: dict[str, Any] = {}
    if "n" in body:
        screen_n(body["n"])
    max_tokens = screen_max_tokens(body)
    if max_tokens is not None:
        native["max_tokens"] = max_tokens
    for key in SAMPLING_RANGES:
        if key in body:
            native[key] = screen_sampling_value(body[key], key)
    if "seed" in body:
        native["seed"] = screen_seed(body["seed"])
    if "stop" in body:
        native["stop"] = screen_stop(body["stop"])
    if "reasoning_effort" in body:
        native["reasoning_effort"] = screen_reasoning_effort(body["reasoning_effort"])
    if "user" in body:  # accepted, and not acted on: named
        screen_user(body["user"])
        ignored.add("user")
    if "prompt_cache_key" in body:  # acted on: the conversation's key (horde/oai/conversation.py)
        conversation.checked_key(body["prompt_cache_key"], "prompt_cache_key")
    return native


def _screen_capabilities(body: dict, ignored: Ignored) -> dict:
    tools = screen_tools(body["tools"], ignored) if "tools" in body else []
    tool_choice = screen_tool_choice(body["tool_choice"], ignored) if "tool_choice" in body else None
    parallel = screen_parallel_tool_calls(body["parallel_tool_calls"]) if "parallel_tool_calls" in body else None
    check_tool_options(tools, tool_choice, parallel)
    response_format = screen_response_format(body["response_format"]) if "response_format" in body else None
    check_tools_payload_size(tools or None, tool_choice, response_format)
    native = native_tool_keys(tools, tool_choice, parallel)
    if response_format is not None:
        native["response_format"] = response_format
    return native


def _check_openai_guards(native: dict, openai_guards: bool) -> None:
    response_format = native.get("response_format") or {}
    if (
        openai_guards
        and response_format.get("type") == "json_object"
        and not mentions_word(native["messages"], JSON_MODE_WORD)
    ):
        raise ScreeningError(
            "'messages' must contain the word 'json' in some form, to use 'response_format' of type 'json_object'.",
            code=BAD_REQUEST,
            param="messages",
        )
