"""Screening of the scalar keys and of stream and stream_options (horde/oai/screening/sampling.py)."""

from __future__ import annotations

import pytest

from tests.support.screening import (
    BAD,
    CONFLICT,
    UNSUPPORTED,
    assert_refused,
    make_body,
    screen,
)

# --- Ranges and types of the scalar keys -----------------------------------------------------------


@pytest.mark.parametrize(
    "key,value,code,message",
    [
        (
            "temperature",
            2.5,
            UNSUPPORTED,
            "Invalid 'temperature': decimal above maximum value. Expected a value <= 2, but got 2.5 instead.",
        ),
        (
            "temperature",
            -2.5,
            UNSUPPORTED,
            "Invalid 'temperature': decimal below minimum value. Expected a value >= 0, but got -2.5 instead.",
        ),
        (
            "temperature",
            3,
            UNSUPPORTED,
            "Invalid 'temperature': decimal above maximum value. Expected a value <= 2, but got 3 instead.",
        ),
        (
            "top_p",
            5,
            UNSUPPORTED,
            "Invalid 'top_p': decimal above maximum value. Expected a value <= 1, but got 5 instead.",
        ),
        (
            "top_p",
            -0.1,
            UNSUPPORTED,
            "Invalid 'top_p': decimal below minimum value. Expected a value >= 0, but got -0.1 instead.",
        ),
        (
            "frequency_penalty",
            3,
            UNSUPPORTED,
            "Invalid 'frequency_penalty': decimal above maximum value. Expected a value <= 2, but got 3 instead.",
        ),
        (
            "presence_penalty",
            -3,
            UNSUPPORTED,
            "Invalid 'presence_penalty': decimal below minimum value. Expected a value >= -2, but got -3 instead.",
        ),
        ("n", 0, UNSUPPORTED, "Invalid 'n': integer below minimum value. Expected a value >= 1, but got 0 instead."),
        ("n", 2, UNSUPPORTED, None),
        ("n", 129, UNSUPPORTED, None),
        (
            "max_tokens",
            0,
            UNSUPPORTED,
            "Invalid 'max_tokens': integer below minimum value. Expected a value >= 1, but got 0 instead.",
        ),
        (
            "max_completion_tokens",
            -5,
            UNSUPPORTED,
            "Invalid 'max_completion_tokens': integer below minimum value. Expected a value >= 1, but got -5 instead.",
        ),
        (
            "max_tokens",
            16385,
            UNSUPPORTED,
            "Invalid 'max_tokens': integer above maximum value. Expected a value <= 16384, but got 16385 instead.",
        ),
        (
            "stop",
            ["a", "b", "c", "d", "e"],
            UNSUPPORTED,
            "Invalid 'stop': array too long. Expected an array with maximum length 4, "
            "but got an array with length 5 instead.",
        ),
        ("n", "1", BAD, "Invalid type for 'n': expected an integer, but got a string instead."),
        ("n", 1.0, BAD, "Invalid type for 'n': expected an integer, but got a decimal instead."),
        ("n", True, BAD, "Invalid type for 'n': expected an integer, but got a boolean instead."),
        ("max_tokens", 64.5, BAD, "Invalid type for 'max_tokens': expected an integer, but got a decimal instead."),
        ("max_tokens", "64", BAD, "Invalid type for 'max_tokens': expected an integer, but got a string instead."),
        (
            "max_completion_tokens",
            False,
            BAD,
            "Invalid type for 'max_completion_tokens': expected an integer, but got a boolean instead.",
        ),
        ("temperature", True, BAD, "Invalid type for 'temperature': expected a number, but got a boolean instead."),
        ("temperature", "0.5", BAD, "Invalid type for 'temperature': expected a number, but got a string instead."),
        ("temperature", float("nan"), BAD, None),
        ("top_p", float("inf"), BAD, None),
        (
            "presence_penalty",
            [0],
            BAD,
            "Invalid type for 'presence_penalty': expected a number, but got an array instead.",
        ),
        ("seed", "7", BAD, "Invalid type for 'seed': expected an integer, but got a string instead."),
        ("seed", 7.5, BAD, "Invalid type for 'seed': expected an integer, but got a decimal instead."),
        ("seed", 2**63, UNSUPPORTED, None),
        (
            "stop",
            3,
            BAD,
            "Invalid type for 'stop': expected a string or an array of strings, but got an integer instead.",
        ),
        ("stop", [], BAD, None),
        ("stop", "", BAD, None),
        (
            "reasoning_effort",
            "extreme",
            BAD,
            "Invalid value: 'extreme'. Supported values are: 'none', 'minimal', 'low', 'medium', 'high', and 'xhigh'.",
        ),
        (
            "reasoning_effort",
            2,
            BAD,
            "Invalid type for 'reasoning_effort': expected a string, but got an integer instead.",
        ),
        ("user", 5, BAD, "Invalid type for 'user': expected a string, but got an integer instead."),
        ("stream", "true", BAD, "Invalid type for 'stream': expected a boolean, but got a string instead."),
        ("stream", 1, BAD, "Invalid type for 'stream': expected a boolean, but got an integer instead."),
    ],
)
def test_scalar_value_refusals(key, value, code, message):
    assert_refused(make_body(**{key: value}), code, key, message)


@pytest.mark.parametrize("value,param", [([1], "stop[0]"), (["a", ""], "stop[1]"), (["a", None], "stop[1]")])
def test_stop_entries_are_checked_at_their_index(value, param):
    assert_refused(make_body(stop=value), BAD, param)


@pytest.mark.parametrize("key", ["max_tokens", "max_completion_tokens"])
@pytest.mark.parametrize("value", [1, 8, 15])
def test_token_limit_below_the_horde_floor_states_the_floor(key, value):
    error = assert_refused(make_body(**{key: value}), UNSUPPORTED, key)
    assert ">= 16" in error.message and f"got {value} instead" in error.message


@pytest.mark.parametrize("value", [16, 512, 16384])
def test_token_limit_inside_the_horde_range_is_forwarded(value):
    assert screen(make_body(max_completion_tokens=value)).native["max_tokens"] == value


def test_token_limits_must_agree():
    error = assert_refused(make_body(max_tokens=100, max_completion_tokens=200), CONFLICT, "max_completion_tokens")
    assert "100" in error.message and "200" in error.message
    assert screen(make_body(max_tokens=100, max_completion_tokens=100)).native["max_tokens"] == 100


@pytest.mark.parametrize(
    "key,value",
    [
        ("temperature", 0),
        ("temperature", 2),
        ("temperature", 0.7),
        ("top_p", 0),
        ("top_p", 1),
        ("frequency_penalty", -2),
        ("frequency_penalty", 2.0),
        ("presence_penalty", 0),
        ("seed", -(2**63)),
        ("seed", 2**63 - 1),
        ("reasoning_effort", "none"),
        ("reasoning_effort", "xhigh"),
    ],
)
def test_boundary_values_are_forwarded_unchanged(key, value):
    assert screen(make_body(**{key: value})).native[key] == value


@pytest.mark.parametrize("key", ["n", "user"])
def test_n_one_and_user_are_accepted_and_dropped(key):
    native = screen(make_body(**{key: 1 if key == "n" else "user-42"})).native
    assert key not in native


# --- stream and stream_options ------------------------------------------------------------------


@pytest.mark.parametrize(
    "keys,code,param,message",
    [
        (
            {"stream_options": {"include_usage": True}},
            CONFLICT,
            "stream_options",
            "The 'stream_options' parameter is only allowed when 'stream' is enabled.",
        ),
        ({"stream": False, "stream_options": {}}, CONFLICT, "stream_options", None),
        (
            {"stream": True, "stream_options": {"include_obfuscation": False}},
            UNSUPPORTED,
            "stream_options.include_obfuscation",
            "Unknown parameter: 'stream_options.include_obfuscation'.",
        ),
        (
            {"stream": True, "stream_options": {"include_usage": "yes"}},
            BAD,
            "stream_options.include_usage",
            "Invalid type for 'stream_options.include_usage': expected a boolean, but got a string instead.",
        ),
        ({"stream": True, "stream_options": ["include_usage"]}, BAD, "stream_options", None),
    ],
)
def test_stream_options_refusals(keys, code, param, message):
    assert_refused(make_body(**keys), code, param, message)


@pytest.mark.parametrize(
    "keys,stream,include_usage",
    [
        ({}, False, False),
        ({"stream": None}, False, False),
        ({"stream": True}, True, False),
        ({"stream": True, "stream_options": {"include_usage": True}}, True, True),
        ({"stream": True, "stream_options": {"include_usage": None}}, True, False),
        ({"stream": False, "stream_options": None}, False, False),
    ],
)
def test_stream_flags(keys, stream, include_usage):
    screened = screen(make_body(**keys))
    assert (screened.stream, screened.include_usage) == (stream, include_usage)
    assert "stream" not in screened.native and "stream_options" not in screened.native
