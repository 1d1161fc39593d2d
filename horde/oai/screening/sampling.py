"""Screening of the scalar request keys: n, token limits, sampling values, seed,
stop, reasoning_effort, user, prompt_cache_key, stream and stream_options.

Range refusals use OpenAI's message and param with code
UnsupportedChatParameter; type errors are BadRequest. Every one of these keys
sent as null counts as omitted, as OpenAI's specification makes them nullable.
"""

from __future__ import annotations

from typing import Any

from horde.http.contract import MAX_STOP_SEQUENCES, REASONING_EFFORTS, SAMPLING_RANGES, TOKEN_CEILING, TOKEN_FLOOR
from horde.oai.ignored import Ignored
from horde.oai.screening.base import (
    CONFLICT,
    UNSUPPORTED,
    ScreeningError,
    array_too_long,
    bad_type,
    check_range,
    empty_array,
    empty_string,
    invalid_choice,
    is_int,
    require_bool,
    require_int,
    require_number,
    require_object,
    require_string,
)
from horde.oai.screening.fields import FixedSchema, StrictBool, load_fixed_object

OPENAI_TOKEN_MINIMUM = 1
SEED_MIN = -(2**63)
SEED_MAX = 2**63 - 1


class StreamOptionsSchema(FixedSchema):
    """stream_options: only include_usage, unknown keys refused."""

    include_usage = StrictBool()


_STREAM_OPTIONS = StreamOptionsSchema()  # reused: loading keeps no state on the schema


def screen_n(value: Any) -> None:
    """n is accepted only as 1, and dropped."""
    n = require_int(value, "n")
    check_range(n, "n", 1, None)
    if n != 1:
        raise ScreeningError(
            f"Unsupported value: 'n' must be 1, since the AI Horde generates one choice per "
            f"request, but got {n} instead.",
            code=UNSUPPORTED,
            param="n",
        )


def screen_token_limit(value: Any, param: str) -> int:
    limit = require_int(value, param)
    check_range(limit, param, OPENAI_TOKEN_MINIMUM, None)
    if limit < TOKEN_FLOOR:
        raise ScreeningError(
            f"Invalid '{param}': integer below the AI Horde's minimum value. Expected a value >= "
            f"{TOKEN_FLOOR}, but got {limit} instead. The Horde's native text API generates at "
            f"least {TOKEN_FLOOR} tokens.",
            code=UNSUPPORTED,
            param=param,
        )
    check_range(limit, param, None, TOKEN_CEILING)
    return limit


def lowered_to_ceiling(value: Any, param: str, ignored: Ignored) -> Any:
    """A token limit of a dialect whose clients send their model's maximum (Messages, Responses): above the
    Horde's ceiling it is lowered to it and named; any other value goes to screen_token_limit as sent."""
    if is_int(value) and value > TOKEN_CEILING:
        ignored.lower(param, value, TOKEN_CEILING)
        return TOKEN_CEILING
    return value


def screen_max_tokens(body: dict) -> int | None:
    """The completion limit from max_tokens or max_completion_tokens, which must agree."""
    limits = {
        key: screen_token_limit(body[key], key)
        for key in ("max_tokens", "max_completion_tokens")
        if body.get(key) is not None
    }
    if len(set(limits.values())) > 1:
        raise ScreeningError(
            f"'max_tokens' ({limits['max_tokens']}) and 'max_completion_tokens' "
            f"({limits['max_completion_tokens']}) disagree: send one of them, or the same value "
            "in both.",
            code=CONFLICT,
            param="max_completion_tokens",
        )
    return next(iter(limits.values()), None)


def screen_sampling_value(value: Any, param: str) -> float | int:
    number = require_number(value, param)
    low, high = SAMPLING_RANGES[param]
    check_range(number, param, low, high, kind="decimal")
    return number


def screen_seed(value: Any) -> int:
    seed = require_int(value, "seed")
    check_range(seed, "seed", SEED_MIN, SEED_MAX)
    return seed


def screen_stop(value: Any) -> list[str]:
    """One to four non-empty stop sequences, always as a list."""
    if isinstance(value, str):
        return [_stop_sequence(value, "stop")]
    if not isinstance(value, list):
        raise bad_type("stop", "a string or an array of strings", value)
    if not value:
        raise empty_array("stop")
    if len(value) > MAX_STOP_SEQUENCES:
        raise array_too_long("stop", MAX_STOP_SEQUENCES, len(value))
    return [_stop_sequence(item, f"stop[{index}]") for index, item in enumerate(value)]


def _stop_sequence(value: Any, param: str) -> str:
    sequence = require_string(value, param)
    if not sequence:
        raise empty_string(param)
    return sequence


def screen_reasoning_effort(value: Any) -> str:
    effort = require_string(value, "reasoning_effort")
    if effort not in REASONING_EFFORTS:
        raise invalid_choice("reasoning_effort", effort, REASONING_EFFORTS)
    return effort


def screen_user(value: Any) -> None:
    """user is accepted as a string and dropped."""
    require_string(value, "user")


def screen_stream(body: dict) -> tuple[bool, bool]:
    """(stream, include_usage); stream_options needs stream true."""
    stream = body.get("stream")
    stream = False if stream is None else require_bool(stream, "stream")
    if body.get("stream_options") is None:
        return stream, False
    options = load_fixed_object(
        _STREAM_OPTIONS, require_object(body["stream_options"], "stream_options"), "stream_options"
    )
    if not stream:
        raise ScreeningError(
            "The 'stream_options' parameter is only allowed when 'stream' is enabled.",
            code=CONFLICT,
            param="stream_options",
        )
    return stream, options.get("include_usage", False)
