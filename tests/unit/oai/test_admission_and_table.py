"""The default no-op table (DEFAULT_NO_OP_PARAMETERS) and the native request that
screening hands to admission. Pure unit tests: no server, no database.
"""

from __future__ import annotations

import json
from dataclasses import fields

import pytest

from horde.oai.screening import (
    DEFAULT_NO_OP_PARAMETERS,
    REQUEST_FIELDS,
    ScreenedRequest,
    ScreeningError,
    screen_chat_request,
)

USER_HI = {"role": "user", "content": "Hi"}
TOOL = {"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}

DOCUMENTED_TABLE = {
    "tools": ([], None),
    "tool_choice": (None,),
    "parallel_tool_calls": (None,),
    "response_format": ({"type": "text"},),
    "logprobs": (False,),
    "top_logprobs": (0,),
    "store": (False,),
    "service_tier": ("auto", "default"),
}
TABLE_DEFAULTS = [(key, value) for key, values in DOCUMENTED_TABLE.items() for value in values]
HORDE_NATIVE_DEFAULTS = {
    "trusted_workers": False,
    "context_fitting": "truncate_oldest",
    "conformance": "strict",
    "availability_mode": "fail_fast",
}


def make_body(**keys):
    body = {"model": "koboldcpp/tiny", "messages": [dict(USER_HI)]}
    body.update(keys)
    return body


def minimal_native(**keys):
    return {"models": ["koboldcpp/tiny"], "messages": [USER_HI], **keys, **HORDE_NATIVE_DEFAULTS}


def refusal(body) -> ScreeningError:
    with pytest.raises(ScreeningError) as info:
        screen_chat_request(body)
    return info.value


# --- The closed table ----------------------------------------------------------------------------


def test_the_table_is_the_documented_one():
    assert DEFAULT_NO_OP_PARAMETERS == DOCUMENTED_TABLE


def test_table_keys_outside_the_request_model_are_exactly_the_client_extras():
    assert set(DEFAULT_NO_OP_PARAMETERS) - REQUEST_FIELDS == {"logprobs", "top_logprobs", "store", "service_tier"}


@pytest.mark.parametrize("key,value", TABLE_DEFAULTS)
def test_each_default_is_accepted_and_dropped(key, value):
    screened = screen_chat_request(make_body(**{key: value}))
    assert screened.native == minimal_native()


def test_all_defaults_together_are_accepted_and_dropped():
    body = make_body(
        tools=[],
        tool_choice=None,
        parallel_tool_calls=None,
        response_format={"type": "text"},
        logprobs=False,
        top_logprobs=0,
        store=False,
        service_tier="auto",
    )
    assert screen_chat_request(body).native == minimal_native()


@pytest.mark.parametrize(
    "key,value",
    [
        ("logprobs", True),
        ("logprobs", None),
        ("logprobs", 0),
        ("logprobs", "false"),
        ("top_logprobs", 1),
        ("top_logprobs", 20),
        ("top_logprobs", None),
        ("top_logprobs", False),
        ("top_logprobs", 0.0),
        ("top_logprobs", "0"),
        ("store", True),
        ("store", None),
        ("store", 0),
        ("service_tier", "priority"),
        ("service_tier", "scale"),
        ("service_tier", None),
        ("service_tier", "AUTO"),
        ("service_tier", ["auto"]),
    ],
)
def test_table_keys_at_another_value_are_refused(key, value):
    error = refusal(make_body(**{key: value}))
    assert (error.status, error.code, error.param) == (400, "UnsupportedChatParameter", key)
    assert error.message.startswith(f"Unsupported value for '{key}': the AI Horde accepts it only at its default (")


def test_the_refusal_names_the_accepted_defaults():
    assert '("auto" or "default")' in refusal(make_body(service_tier="priority")).message
    assert "(false)" in refusal(make_body(logprobs=True)).message


def test_the_service_tier_refusal_also_names_flex():
    assert refusal(make_body(service_tier="scale")).message.endswith('which it drops, or at "flex".')


@pytest.mark.parametrize("value,tier", [("flex", "flex"), ("auto", "default"), ("default", "default")])
def test_flex_is_acted_on_and_the_defaults_are_dropped(value, tier):
    screened = screen_chat_request(make_body(service_tier=value))
    assert screened.service_tier == tier
    assert screened.native == minimal_native()


@pytest.mark.parametrize(
    "keys,native_keys",
    [
        ({"tools": [TOOL]}, {"tools": [TOOL]}),
        ({"tools": [TOOL], "tool_choice": "required"}, {"tools": [TOOL], "tool_choice": "required"}),
        ({"tools": [TOOL], "parallel_tool_calls": False}, {"tools": [TOOL], "parallel_tool_calls": False}),
        ({"tools": [TOOL], "tool_choice": None, "parallel_tool_calls": None}, {"tools": [TOOL]}),
        ({"response_format": {"type": "json_object"}}, {"response_format": {"type": "json_object"}}),
    ],
)
def test_table_request_fields_at_other_values_are_validated_and_forwarded(keys, native_keys):
    native = screen_chat_request(make_body(**keys)).native
    assert {key: native[key] for key in native_keys} == native_keys


@pytest.mark.parametrize(
    "keys,code,param",
    [
        ({"tools": {}}, "BadRequest", "tools"),
        ({"tools": "auto"}, "BadRequest", "tools"),
        ({"tool_choice": "auto"}, "ChatRequestConflict", "tool_choice"),
        ({"parallel_tool_calls": True}, "ChatRequestConflict", "parallel_tool_calls"),
        ({"response_format": {"type": "text", "strict": True}}, "UnsupportedChatParameter", "response_format.strict"),
        ({"response_format": {"type": "TEXT"}}, "UnsupportedChatParameter", "response_format.type"),
    ],
)
def test_near_defaults_of_request_fields_are_validated_not_dropped(keys, code, param):
    error = refusal(make_body(**keys))
    assert (error.code, error.param) == (code, param)


def test_guide_verification_stock_client_defaults_only():
    """Guide, Client defaults: only model, messages and the table's keys are served."""
    body = {
        "model": "koboldcpp/tiny",
        "messages": [USER_HI],
        "tools": None,
        "tool_choice": None,
        "parallel_tool_calls": None,
        "response_format": {"type": "text"},
        "logprobs": False,
        "top_logprobs": 0,
        "store": False,
        "service_tier": "default",
    }
    screened = screen_chat_request(body)
    assert screened.native == minimal_native()
    assert (screened.stream, screened.include_usage, screened.include_reasoning) == (False, False, True)


def test_guide_verification_logit_bias_is_refused_at_its_key():
    body = make_body(logit_bias={"50256": -100})
    error = refusal(body)
    assert (error.code, error.param) == ("UnsupportedChatParameter", "logit_bias")


# --- The native request handed to admission --------------------------------------------------------


def test_screened_request_interface():
    assert [field.name for field in fields(ScreenedRequest)] == [
        "native",
        "stream",
        "include_usage",
        "include_reasoning",
        "model_param",
        "ignored",
        "service_tier",
    ]


def test_minimal_request_native_shape():
    screened = screen_chat_request(make_body())
    assert screened.native == minimal_native()
    assert screened.model_param == "model"
    assert "max_tokens" not in screened.native  # admission applies the 512 default


def test_full_request_native_shape():
    body = {
        "models": ["org/a", "org/b"],
        "messages": [
            {"role": "developer", "content": "Reply in JSON."},
            {"role": "user", "content": "Hi", "name": "ann"},
        ],
        "max_completion_tokens": 300,
        "temperature": 0.2,
        "top_p": 0.9,
        "frequency_penalty": 0.5,
        "presence_penalty": -0.5,
        "seed": 11,
        "stop": "END",
        "n": 1,
        "stream": True,
        "stream_options": {"include_usage": True},
        "tools": [TOOL],
        "tool_choice": "auto",
        "parallel_tool_calls": False,
        "response_format": {"type": "json_object"},
        "reasoning_effort": "low",
        "user": "u-1",
        "horde": {
            "only": ["w1"],
            "trusted_workers": True,
            "context_fitting": "grow",
            "max_kudos": 100,
            "include_reasoning": False,
            "conformance": "best_effort",
            "openai_guards": True,
            "availability_mode": "wait",
        },
    }
    screened = screen_chat_request(body)
    assert screened.native == {
        "models": ["org/a", "org/b"],
        "messages": [{"role": "system", "content": "Reply in JSON."}, {"role": "user", "content": "Hi", "name": "ann"}],
        "max_tokens": 300,
        "temperature": 0.2,
        "top_p": 0.9,
        "frequency_penalty": 0.5,
        "presence_penalty": -0.5,
        "seed": 11,
        "stop": ["END"],
        "reasoning_effort": "low",
        "tools": [TOOL],
        "tool_choice": "auto",
        "parallel_tool_calls": False,
        "response_format": {"type": "json_object"},
        "only": ["w1"],
        "trusted_workers": True,
        "context_fitting": "grow",
        "max_kudos": 100,
        "conformance": "best_effort",
        "availability_mode": "wait",
    }
    assert (screened.stream, screened.include_usage, screened.include_reasoning, screened.model_param) == (
        True,
        True,
        False,
        "models",
    )
    json.dumps(screened.native)


@pytest.mark.parametrize(
    "keys,max_tokens",
    [
        ({"max_tokens": 64}, 64),
        ({"max_completion_tokens": 64}, 64),
        ({"max_tokens": 64, "max_completion_tokens": 64}, 64),
        ({"max_tokens": None, "max_completion_tokens": 32}, 32),
        ({"max_tokens": None}, None),
    ],
)
def test_native_max_tokens(keys, max_tokens):
    assert screen_chat_request(make_body(**keys)).native.get("max_tokens") == max_tokens


@pytest.mark.parametrize("stop,native", [("###", ["###"]), (["a", "b"], ["a", "b"]), (None, None)])
def test_native_stop_is_always_a_list(stop, native):
    assert screen_chat_request(make_body(stop=stop)).native.get("stop") == native


@pytest.mark.parametrize(
    "key",
    [
        "temperature",
        "top_p",
        "frequency_penalty",
        "presence_penalty",
        "seed",
        "stop",
        "reasoning_effort",
        "n",
        "user",
        "max_tokens",
        "max_completion_tokens",
        "stream",
        "stream_options",
    ],
)
def test_null_request_fields_count_as_omitted(key):
    assert screen_chat_request(make_body(**{key: None})).native == minimal_native()


def test_null_model_beside_models_is_no_conflict():
    screened = screen_chat_request({"model": None, "models": ["a"], "messages": [USER_HI]})
    assert (screened.native["models"], screened.model_param) == (["a"], "models")


def test_include_reasoning_and_openai_guards_stay_out_of_native():
    screened = screen_chat_request(make_body(horde={"include_reasoning": False, "openai_guards": True}))
    assert screened.include_reasoning is False
    assert screened.native == minimal_native()


def test_tool_choice_none_forwards_no_tool_keys_but_keeps_response_format():
    native = screen_chat_request(
        make_body(tools=[TOOL], tool_choice="none", parallel_tool_calls=True, response_format={"type": "json_object"})
    ).native
    assert native == minimal_native(response_format={"type": "json_object"})


def test_a_screening_error_is_raised_for_every_refusal_never_anything_else():
    for body in (
        {"model": "m", "messages": [{"role": "user", "content": {"a": 1}}]},
        {"model": "m", "messages": [USER_HI], "tools": [TOOL], "tool_choice": []},
        {"model": "m", "messages": [USER_HI], "horde": {"only": [[]]}},
        {"model": ["m"], "messages": [USER_HI]},
    ):
        assert isinstance(refusal(body), ScreeningError)
