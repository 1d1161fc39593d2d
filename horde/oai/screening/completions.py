"""Screening of a POST /v1/completions body: OpenAI's legacy text completion, served by text jobs.

Turns the body into a native text request (the AI Horde's GenerationInputKobold) or
raises ScreeningError, before anything is queued. The shared rules (model or models,
token limits, sampling ranges, seed, stop, stream, the horde object) are chat's.
Refused with 400 and the key as param, never dropped: echo true, logprobs, suffix,
best_of above 1, a non-empty logit_bias, and prompts that are several strings or tokens.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from horde.oai.ignored import Ignored
from horde.oai.screening.base import (
    BAD_REQUEST,
    UNSUPPORTED,
    ScreeningError,
    check_range,
    empty_string,
    json_type_name,
    require_bool,
    require_int,
    require_object,
    unknown_parameter,
)
from horde.oai.screening.horde_options import screen_horde_options
from horde.oai.screening.request import screen_models
from horde.oai.screening.sampling import (
    screen_sampling_value,
    screen_seed,
    screen_stop,
    screen_stream,
    screen_token_limit,
    screen_user,
)

OPENAI_DEFAULT_MAX_TOKENS = 16
N_MAX = 20
NATIVE_TOP_P_MIN = 0.001
REQUEST_FIELDS = frozenset(
    {
        "model",
        "models",
        "prompt",
        "max_tokens",
        "temperature",
        "top_p",
        "stop",
        "n",
        "stream",
        "stream_options",
        "seed",
        "user",
        "frequency_penalty",
        "presence_penalty",
        "horde",
        "echo",
        "logprobs",
        "suffix",
        "best_of",
        "logit_bias",
    }
)
#: horde options with no meaning for a text completion (chat messages, reasoning, conformance).
CHAT_ONLY_OPTIONS = ("context_fitting", "include_reasoning", "conformance", "openai_guards")


@dataclass
class ScreenedCompletion:
    native: dict
    stream: bool
    include_usage: bool
    model_param: str
    availability_mode: str
    max_kudos: int | None
    penalties: dict
    #: What the body asked for that the Horde accepts without acting on it (horde/oai/ignored.py).
    ignored: Ignored = field(default_factory=Ignored)


def screen_completion_request(body: Any) -> ScreenedCompletion:
    if not isinstance(body, dict):
        raise ScreeningError(
            f"Invalid type for the request body: expected an object, but got {json_type_name(body)} instead.",
            code=BAD_REQUEST,
            param=None,
        )
    for key in body:
        if key not in REQUEST_FIELDS:
            raise unknown_parameter(key)
    body = {key: value for key, value in body.items() if value is not None or key == "horde"}
    _refuse_unsupported(body)
    models, model_param = screen_models(body)
    params: dict[str, Any] = {"n": _screen_n(body), "max_length": OPENAI_DEFAULT_MAX_TOKENS}
    if "max_tokens" in body:
        params["max_length"] = screen_token_limit(body["max_tokens"], "max_tokens")
    for key in ("temperature", "top_p"):
        if key in body:
            params[key] = screen_sampling_value(body[key], key)
    if "top_p" in params:
        params["top_p"] = max(params["top_p"], NATIVE_TOP_P_MIN)  # the native API's floor; 0 and 0.001 are greedy
    penalties = {
        key: screen_sampling_value(body[key], key)
        for key in ("frequency_penalty", "presence_penalty")
        if key in body and body[key] != 0
    }
    if "seed" in body:
        params["seed"] = screen_seed(body["seed"])
    if "stop" in body:
        params["stop_sequence"] = screen_stop(body["stop"])
    ignored = Ignored()
    if "user" in body:  # accepted, and not acted on: named
        screen_user(body["user"])
        ignored.add("user")
    stream, include_usage = screen_stream(body)
    options = screen_horde_options(body)
    for key in CHAT_ONLY_OPTIONS:
        if key in (body.get("horde") or {}):
            raise ScreeningError(
                f"Unsupported parameter: 'horde.{key}' applies to chat completions only.",
                code=UNSUPPORTED,
                param=f"horde.{key}",
            )
    native = {
        "prompt": _screen_prompt(body),
        "models": models,
        "params": params,
        "trusted_workers": options["trusted_workers"],
    }
    if options.get("only"):
        native["workers"] = list(options["only"])
    return ScreenedCompletion(
        native=native,
        stream=stream,
        include_usage=include_usage,
        model_param=model_param,
        availability_mode=options["availability_mode"],
        max_kudos=options.get("max_kudos"),
        penalties=penalties,
        ignored=ignored,
    )


def _refuse(param: str, why: str) -> ScreeningError:
    return ScreeningError(f"Unsupported value for '{param}': {why}", code=UNSUPPORTED, param=param)


def _refuse_unsupported(body: dict) -> None:
    if "echo" in body and require_bool(body["echo"], "echo"):
        raise _refuse("echo", "the AI Horde's workers return only the completion, not the prompt.")
    if "logprobs" in body:
        raise _refuse("logprobs", "the AI Horde's workers do not return log probabilities.")
    if "suffix" in body:
        raise _refuse("suffix", "the AI Horde's text API has no insertion (suffix) mode.")
    if "best_of" in body:
        best_of = require_int(body["best_of"], "best_of")
        check_range(best_of, "best_of", 1, N_MAX)
        if best_of != 1:
            raise _refuse("best_of", "the AI Horde cannot rank completions by log probability; best_of must be 1.")
    if "logit_bias" in body and require_object(body["logit_bias"], "logit_bias"):
        raise _refuse("logit_bias", "the AI Horde's workers take no token biases.")


def _screen_n(body: dict) -> int:
    if "n" not in body:
        return 1
    n = require_int(body["n"], "n")
    check_range(n, "n", 1, N_MAX)
    return n


def _screen_prompt(body: dict) -> str:
    if "prompt" not in body:
        raise ScreeningError("Missing required parameter: 'prompt'.", code=BAD_REQUEST, param="prompt")
    prompt = body["prompt"]
    if isinstance(prompt, list):
        if len(prompt) != 1 or not isinstance(prompt[0], str):
            raise _refuse(
                "prompt",
                "the AI Horde takes one prompt string per request (or an array of exactly one "
                "string); several prompts and token arrays are not supported.",
            )
        prompt = prompt[0]
    if not isinstance(prompt, str):
        raise ScreeningError(
            f"Invalid type for 'prompt': expected a string or an array of one string, but got "
            f"{json_type_name(prompt)} instead.",
            code=BAD_REQUEST,
            param="prompt",
        )
    if not prompt:
        raise empty_string("prompt")
    return prompt
