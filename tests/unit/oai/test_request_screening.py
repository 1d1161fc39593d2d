"""Request screening (horde/oai/schema.py): refused keys, values, roles and content
parts, dropped nested keys, SDK replays, tools, schemas, tool history and the
horde object. Pure unit tests: no server, no database.
"""

from __future__ import annotations

import copy
import json
import random

import pytest

from horde.oai.schema import ScreenedRequest, ScreeningError, screen_chat_request
from horde.oai.screening_schemas import MAX_SCHEMA_DEPTH
from horde.oai.screening_tools import TOOLS_PAYLOAD_MAX_BYTES, tools_payload_bytes
from tests.support.fuzz import mutate, random_json

UNSUPPORTED = "UnsupportedChatParameter"
BAD = "BadRequest"
CONFLICT = "ChatRequestConflict"

USER_HI = {"role": "user", "content": "Hi"}
WEATHER_TOOL = {"type": "function", "function": {
    "name": "get_weather", "description": "Weather of a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                   "required": ["city"]}}}


def make_body(**keys):
    body = {"model": "koboldcpp/tiny", "messages": [dict(USER_HI)]}
    body.update(keys)
    return body


def screen(body) -> ScreenedRequest:
    return screen_chat_request(body)


def refusal(body) -> ScreeningError:
    with pytest.raises(ScreeningError) as info:
        screen_chat_request(body)
    return info.value


def assert_refused(body, code, param, message=None, *, status=400, contains=None):
    error = refusal(body)
    assert (error.status, error.code, error.param) == (status, code, param), error
    if message is not None:
        assert error.message == message
    for fragment in contains or ():
        assert fragment in error.message, error.message
    return error


def messages_of(*messages):
    return make_body(messages=list(messages))


def tool_round(call_ids=("call_1",)):
    """An assistant message calling get_weather once per id."""
    return {"role": "assistant", "content": None, "tool_calls": [
        {"id": call_id, "type": "function",
         "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}
        for call_id in call_ids]}


def tool_answer(call_id, content="sunny"):
    return {"role": "tool", "tool_call_id": call_id, "content": content}


def nested_properties_schema(levels, *, strict_ready=False):
    """An object schema whose innermost {"type": "string"} sits ``levels`` steps below the root."""
    schema = {"type": "string"}
    for _ in range(levels):
        schema = {"type": "object", "properties": {"a": schema}}
        if strict_ready:
            schema.update(required=["a"], additionalProperties=False)
    return schema


# --- The body and top-level keys -------------------------------------------------------------

@pytest.mark.parametrize("body", [[], "text", 1, 1.5, True, None, [make_body()]])
def test_body_must_be_an_object(body):
    error = assert_refused(body, BAD, None)
    assert error.message.startswith("Invalid type for the request body: expected an object")


@pytest.mark.parametrize("key,value", [
    ("logit_bias", {"50256": -100}),
    ("functions", [{"name": "f"}]),
    ("function_call", "auto"),
    ("audio", {"voice": "alloy", "format": "mp3"}),
    ("modalities", ["text"]),
    ("prediction", {"type": "content", "content": "x"}),
    ("web_search_options", {}),
    ("rep_pen", 1.1),
    ("top_k", 40),
    ("min_p", 0.05),
    ("metadata", {"a": "b"}),
    ("safety_identifier", "u1"),
    ("verbosity", "low"),
    ("dry_run", True),
    ("operation_key", "k"),
    ("Model", "x"),
])
def test_unknown_top_level_keys_are_refused_with_the_key_as_param(key, value):
    assert_refused(make_body(**{key: value}), UNSUPPORTED, key, f"Unknown parameter: '{key}'.")


def test_the_first_unknown_key_in_body_order_is_reported():
    body = {"top_k": 1, "model": "m", "messages": [USER_HI], "min_p": 0.1}
    assert_refused(body, UNSUPPORTED, "top_k")


def test_unknown_keys_are_reported_before_a_missing_model():
    assert_refused({"logit_bias": {}}, UNSUPPORTED, "logit_bias")


# --- model and models ---------------------------------------------------------------------------

@pytest.mark.parametrize("body,code,param,message", [
    ({"messages": [USER_HI]}, BAD, "model", "Missing required parameter: 'model'."),
    ({"model": None, "messages": [USER_HI]}, BAD, "model", "Missing required parameter: 'model'."),
    ({"model": "m"}, BAD, "messages", "Missing required parameter: 'messages'."),
    ({"model": "m", "messages": None}, BAD, "messages", "Missing required parameter: 'messages'."),
    ({"model": "m", "models": ["m"], "messages": [USER_HI]}, CONFLICT, "models", None),
    ({"model": 5, "messages": [USER_HI]}, BAD, "model",
     "Invalid type for 'model': expected a string, but got an integer instead."),
    ({"model": "", "messages": [USER_HI]}, BAD, "model", None),
    ({"models": "m", "messages": [USER_HI]}, BAD, "models",
     "Invalid type for 'models': expected an array, but got a string instead."),
    ({"models": [], "messages": [USER_HI]}, UNSUPPORTED, "models", None),
    ({"models": ["a", "b", "c", "d", "e", "f"], "messages": [USER_HI]}, UNSUPPORTED, "models",
     "Invalid 'models': array too long. Expected an array with maximum length 5, "
     "but got an array with length 6 instead."),
    ({"models": ["a", ""], "messages": [USER_HI]}, UNSUPPORTED, "models", None),
    ({"models": ["a", 3], "messages": [USER_HI]}, UNSUPPORTED, "models", None),
    ({"models": [None], "messages": [USER_HI]}, UNSUPPORTED, "models", None),
])
def test_model_and_models_refusals(body, code, param, message):
    assert_refused(body, code, param, message)


@pytest.mark.parametrize("body,param,model", [
    (make_body(model="llama3:8b"), "model", "llama3:8b"),
    ({"models": ["a/b", "c:d"], "messages": [USER_HI]}, "models[1]", "c:d"),
    ({"models": ["x:1", "c:d"], "messages": [USER_HI]}, "models[0]", "x:1"),
])
def test_a_model_variant_is_404_model_not_found(body, param, model):
    assert_refused(body, "model_not_found", param,
                   f"The model `{model}` does not exist or you do not have access to it.",
                   status=404)


def test_models_list_is_kept_in_order_and_model_param_reported():
    screened = screen({"models": ["org/a", "org/b"], "messages": [USER_HI]})
    assert screened.native["models"] == ["org/a", "org/b"]
    assert screened.model_param == "models"
    screened = screen(make_body(model="org/with/slashes"))
    assert screened.native["models"] == ["org/with/slashes"]
    assert screened.model_param == "model"


# --- Ranges and types of the scalar keys -----------------------------------------------------------

@pytest.mark.parametrize("key,value,code,message", [
    ("temperature", 2.5, UNSUPPORTED,
     "Invalid 'temperature': decimal above maximum value. Expected a value <= 2, but got 2.5 instead."),
    ("temperature", -2.5, UNSUPPORTED,
     "Invalid 'temperature': decimal below minimum value. Expected a value >= 0, but got -2.5 instead."),
    ("temperature", 3, UNSUPPORTED,
     "Invalid 'temperature': decimal above maximum value. Expected a value <= 2, but got 3 instead."),
    ("top_p", 5, UNSUPPORTED,
     "Invalid 'top_p': decimal above maximum value. Expected a value <= 1, but got 5 instead."),
    ("top_p", -0.1, UNSUPPORTED,
     "Invalid 'top_p': decimal below minimum value. Expected a value >= 0, but got -0.1 instead."),
    ("frequency_penalty", 3, UNSUPPORTED,
     "Invalid 'frequency_penalty': decimal above maximum value. Expected a value <= 2, but got 3 instead."),
    ("presence_penalty", -3, UNSUPPORTED,
     "Invalid 'presence_penalty': decimal below minimum value. Expected a value >= -2, but got -3 instead."),
    ("n", 0, UNSUPPORTED,
     "Invalid 'n': integer below minimum value. Expected a value >= 1, but got 0 instead."),
    ("n", 2, UNSUPPORTED, None),
    ("n", 129, UNSUPPORTED, None),
    ("max_tokens", 0, UNSUPPORTED,
     "Invalid 'max_tokens': integer below minimum value. Expected a value >= 1, but got 0 instead."),
    ("max_completion_tokens", -5, UNSUPPORTED,
     "Invalid 'max_completion_tokens': integer below minimum value. Expected a value >= 1, "
     "but got -5 instead."),
    ("max_tokens", 16385, UNSUPPORTED,
     "Invalid 'max_tokens': integer above maximum value. Expected a value <= 16384, "
     "but got 16385 instead."),
    ("stop", ["a", "b", "c", "d", "e"], UNSUPPORTED,
     "Invalid 'stop': array too long. Expected an array with maximum length 4, "
     "but got an array with length 5 instead."),
    ("n", "1", BAD, "Invalid type for 'n': expected an integer, but got a string instead."),
    ("n", 1.0, BAD, "Invalid type for 'n': expected an integer, but got a decimal instead."),
    ("n", True, BAD, "Invalid type for 'n': expected an integer, but got a boolean instead."),
    ("max_tokens", 64.5, BAD,
     "Invalid type for 'max_tokens': expected an integer, but got a decimal instead."),
    ("max_tokens", "64", BAD,
     "Invalid type for 'max_tokens': expected an integer, but got a string instead."),
    ("max_completion_tokens", False, BAD,
     "Invalid type for 'max_completion_tokens': expected an integer, but got a boolean instead."),
    ("temperature", True, BAD,
     "Invalid type for 'temperature': expected a number, but got a boolean instead."),
    ("temperature", "0.5", BAD,
     "Invalid type for 'temperature': expected a number, but got a string instead."),
    ("temperature", float("nan"), BAD, None),
    ("top_p", float("inf"), BAD, None),
    ("presence_penalty", [0], BAD,
     "Invalid type for 'presence_penalty': expected a number, but got an array instead."),
    ("seed", "7", BAD, "Invalid type for 'seed': expected an integer, but got a string instead."),
    ("seed", 7.5, BAD, "Invalid type for 'seed': expected an integer, but got a decimal instead."),
    ("seed", 2 ** 63, UNSUPPORTED, None),
    ("stop", 3, BAD,
     "Invalid type for 'stop': expected a string or an array of strings, but got an integer instead."),
    ("stop", [], BAD, None),
    ("stop", "", BAD, None),
    ("reasoning_effort", "extreme", BAD,
     "Invalid value: 'extreme'. Supported values are: 'none', 'minimal', 'low', 'medium', 'high', "
     "and 'xhigh'."),
    ("reasoning_effort", 2, BAD,
     "Invalid type for 'reasoning_effort': expected a string, but got an integer instead."),
    ("user", 5, BAD, "Invalid type for 'user': expected a string, but got an integer instead."),
    ("stream", "true", BAD, "Invalid type for 'stream': expected a boolean, but got a string instead."),
    ("stream", 1, BAD, "Invalid type for 'stream': expected a boolean, but got an integer instead."),
])
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
    error = assert_refused(make_body(max_tokens=100, max_completion_tokens=200),
                           CONFLICT, "max_completion_tokens")
    assert "100" in error.message and "200" in error.message
    assert screen(make_body(max_tokens=100, max_completion_tokens=100)).native["max_tokens"] == 100


@pytest.mark.parametrize("key,value", [
    ("temperature", 0), ("temperature", 2), ("temperature", 0.7), ("top_p", 0), ("top_p", 1),
    ("frequency_penalty", -2), ("frequency_penalty", 2.0), ("presence_penalty", 0),
    ("seed", -(2 ** 63)), ("seed", 2 ** 63 - 1), ("reasoning_effort", "none"),
    ("reasoning_effort", "xhigh"),
])
def test_boundary_values_are_forwarded_unchanged(key, value):
    assert screen(make_body(**{key: value})).native[key] == value


@pytest.mark.parametrize("key", ["n", "user"])
def test_n_one_and_user_are_accepted_and_dropped(key):
    native = screen(make_body(**{key: 1 if key == "n" else "user-42"})).native
    assert key not in native


# --- stream and stream_options ------------------------------------------------------------------

@pytest.mark.parametrize("keys,code,param,message", [
    ({"stream_options": {"include_usage": True}}, CONFLICT, "stream_options",
     "The 'stream_options' parameter is only allowed when 'stream' is enabled."),
    ({"stream": False, "stream_options": {}}, CONFLICT, "stream_options", None),
    ({"stream": True, "stream_options": {"include_obfuscation": False}}, UNSUPPORTED,
     "stream_options.include_obfuscation", "Unknown parameter: 'stream_options.include_obfuscation'."),
    ({"stream": True, "stream_options": {"include_usage": "yes"}}, BAD,
     "stream_options.include_usage",
     "Invalid type for 'stream_options.include_usage': expected a boolean, but got a string instead."),
    ({"stream": True, "stream_options": ["include_usage"]}, BAD, "stream_options", None),
])
def test_stream_options_refusals(keys, code, param, message):
    assert_refused(make_body(**keys), code, param, message)


@pytest.mark.parametrize("keys,stream,include_usage", [
    ({}, False, False),
    ({"stream": None}, False, False),
    ({"stream": True}, True, False),
    ({"stream": True, "stream_options": {"include_usage": True}}, True, True),
    ({"stream": True, "stream_options": {"include_usage": None}}, True, False),
    ({"stream": False, "stream_options": None}, False, False),
])
def test_stream_flags(keys, stream, include_usage):
    screened = screen(make_body(**keys))
    assert (screened.stream, screened.include_usage) == (stream, include_usage)
    assert "stream" not in screened.native and "stream_options" not in screened.native


# --- Messages: roles, keys and content -------------------------------------------------------------

ROLE_ENUM = "Supported values are: 'system', 'developer', 'user', 'assistant', and 'tool'."


@pytest.mark.parametrize("messages,code,param,message", [
    ("Hi", BAD, "messages", "Invalid type for 'messages': expected an array, but got a string instead."),
    ([], BAD, "messages",
     "Invalid 'messages': empty array. Expected an array with minimum length 1, "
     "but got an empty array instead."),
    (["Hi"], BAD, "messages[0]",
     "Invalid type for 'messages[0]': expected an object, but got a string instead."),
    ([{"content": "Hi"}], BAD, "messages[0].role", "Missing required parameter: 'messages[0].role'."),
    ([{"role": 1, "content": "Hi"}], BAD, "messages[0].role", None),
    ([USER_HI, {"role": "function", "name": "f", "content": "x"}], UNSUPPORTED, "messages[1].role",
     f"Invalid value: 'function'. {ROLE_ENUM}"),
    ([{"role": "bogus", "content": "x"}], UNSUPPORTED, "messages[0].role",
     f"Invalid value: 'bogus'. {ROLE_ENUM}"),
    ([{"role": "User", "content": "x"}], UNSUPPORTED, "messages[0].role", None),
    ([{"role": "user"}], BAD, "messages[0].content", "Missing required parameter: 'messages[0].content'."),
    ([{"role": "user", "content": None}], BAD, "messages[0].content", None),
    ([{"role": "system", "content": 5}], BAD, "messages[0].content", None),
    ([{"role": "user", "content": []}], BAD, "messages[0].content",
     "Invalid 'messages[0].content': empty array. Expected an array with minimum length 1, "
     "but got an empty array instead."),
    ([{"role": "user", "content": ["Hi"]}], BAD, "messages[0].content[0]", None),
    ([{"role": "user", "content": [{"text": "Hi"}]}], BAD, "messages[0].content[0].type",
     "Missing required parameter: 'messages[0].content[0].type'."),
    ([{"role": "user", "content": [{"type": "text"}]}], BAD, "messages[0].content[0].text", None),
    ([{"role": "user", "content": [{"type": "text", "text": 5}]}], BAD, "messages[0].content[0].text", None),
    ([{"role": "user", "content": "Hi", "name": 5}], BAD, "messages[0].name", None),
    ([{"role": "assistant"}], BAD, "messages[0].content", None),
    ([{"role": "assistant", "content": None}], BAD, "messages[0].content", None),
    ([{"role": "assistant", "content": None, "tool_calls": []}], BAD, "messages[0].content", None),
])
def test_message_refusals(messages, code, param, message):
    assert_refused(make_body(messages=messages), code, param, message)


@pytest.mark.parametrize("message", [
    {"role": "user", "content": "Hi", "tool_calls": []},
    {"role": "user", "content": "Hi", "tool_calls": None},
    {"role": "system", "content": "Be brief", "tool_calls": tool_round()["tool_calls"]},
    {"role": "developer", "content": "Be brief", "tool_calls": []},
])
def test_tool_calls_on_a_non_assistant_message_is_refused(message):
    assert_refused(messages_of(message, USER_HI), UNSUPPORTED, "messages[0].tool_calls")


def test_tool_calls_on_a_tool_message_is_refused():
    body = messages_of(USER_HI, tool_round(), dict(tool_answer("call_1"), tool_calls=[]))
    assert_refused(body, UNSUPPORTED, "messages[2].tool_calls")


@pytest.mark.parametrize("role,part,param", [
    ("user", {"type": "input_audio", "input_audio": {"data": "AAAA", "format": "wav"}},
     "messages[0].content[0].type=input_audio"),
    ("user", {"type": "file", "file": {"file_id": "f"}}, "messages[0].content[0].type=file"),
    ("user", {"type": "video_url", "video_url": {"url": "https://x/v.mp4"}},
     "messages[0].content[0].type=video_url"),
    ("user", {"type": "TEXT", "text": "x"}, "messages[0].content[0].type=TEXT"),
    ("system", {"type": "image_url", "image_url": {"url": "https://x/a.png"}},
     "messages[0].content[0].type=image_url"),
    ("developer", {"type": "image_url", "image_url": {"url": "https://x/a.png"}},
     "messages[0].content[0].type=image_url"),
    ("assistant", {"type": "refusal", "refusal": "no"}, "messages[0].content[0].type=refusal"),
    ("assistant", {"type": "image_url", "image_url": {"url": "https://x/a.png"}},
     "messages[0].content[0].type=image_url"),
])
def test_refused_content_parts_are_reported_with_their_type(role, part, param):
    message = {"role": role, "content": [part]}
    assert_refused(messages_of(message, USER_HI), UNSUPPORTED, param)


def test_an_image_in_a_tool_message_is_refused_at_its_path():
    image = {"type": "image_url", "image_url": {"url": "https://x/a.png"}}
    body = messages_of(USER_HI, tool_round(), tool_answer("call_1", [image]))
    assert_refused(body, UNSUPPORTED, "messages[2].content[0].type=image_url")


def test_an_image_in_the_second_message_is_refused_with_the_documented_param():
    image = {"type": "image_url", "image_url": {"url": "https://x/a.png"}}
    body = messages_of(USER_HI, {"role": "assistant", "content": [image]})
    assert_refused(body, UNSUPPORTED, "messages[1].content[0].type=image_url")


@pytest.mark.parametrize("image_url,param", [
    ({"url": "ftp://example.com/a.png"}, "url"),
    ({"url": "data:text/plain;base64,QUJD"}, "url"),
    ({"url": "data:image/png,QUJD"}, "url"),
    ({"url": "data:image/png;base64,"}, "url"),
    ({"url": "example.com/a.png"}, "url"),
    ({"url": "http://"}, "url"),
    ({"url": "http://[::1"}, "url"),
    ({"url": ""}, "url"),
    ({"url": 5}, "url"),
    ({"detail": "high"}, "url"),
    ({"url": "https://example.com/a.png", "detail": "ultra"}, "detail"),
    ({"url": "https://example.com/a.png", "detail": 1}, "detail"),
])
def test_image_url_refusals(image_url, param):
    content = [{"type": "text", "text": "What is it?"}, {"type": "image_url", "image_url": image_url}]
    assert_refused(messages_of({"role": "user", "content": content}), BAD,
                   f"messages[0].content[1].image_url.{param}")


@pytest.mark.parametrize("part,param", [
    ({"type": "image_url"}, "messages[0].content[0].image_url"),
    ({"type": "image_url", "image_url": "https://example.com/a.png"}, "messages[0].content[0].image_url"),
])
def test_image_part_needs_an_image_url_object(part, param):
    assert_refused(messages_of({"role": "user", "content": [part]}), BAD, param)


@pytest.mark.parametrize("url", [
    "https://example.com/cat.png", "http://example.com/a?b=c", "HTTPS://EXAMPLE.COM/A.PNG",
    "data:image/png;base64,iVBORw0KGgo=", "data:image/svg+xml;base64,PHN2Zz4=",
])
def test_image_urls_accepted(url):
    content = [{"type": "image_url", "image_url": {"url": url, "detail": None}}]
    native = screen(messages_of({"role": "user", "content": content})).native
    assert native["messages"][0]["content"] == [{"type": "image_url", "image_url": {"url": url}}]


# --- Messages: dropped keys and normalization ---------------------------------------------------

def test_unknown_message_keys_and_part_keys_are_dropped():
    messages = [
        {"role": "developer", "content": "Be brief.", "name": "policy", "weight": 1},
        {"role": "system", "content": [{"type": "text", "text": "Rules", "cache_control": {"type": "ephemeral"}}]},
        {"role": "user", "name": "ann", "content": [
            {"type": "text", "text": "Look", "annotations": []},
            {"type": "image_url", "extra": 1, "image_url": {
                "url": "https://example.com/a.png", "detail": "low", "format": "png"}}],
         "tool_call_id": "stray", "metadata": {"x": 1}},
        {"role": "assistant", "content": "Sure.", "name": "bot", "refusal": None,
         "reasoning_content": "thinking", "audio": None, "annotations": [], "prefix": True},
        USER_HI,
    ]
    native = screen(make_body(messages=messages)).native
    assert native["messages"] == [
        {"role": "system", "content": "Be brief.", "name": "policy"},
        {"role": "system", "content": [{"type": "text", "text": "Rules"}]},
        {"role": "user", "name": "ann", "content": [
            {"type": "text", "text": "Look"},
            {"type": "image_url", "image_url": {"url": "https://example.com/a.png", "detail": "low"}}]},
        {"role": "assistant", "content": "Sure.", "name": "bot"},
        USER_HI,
    ]


def test_tool_message_name_and_extras_are_dropped():
    body = messages_of(USER_HI, tool_round(),
                       dict(tool_answer("call_1"), name="get_weather", is_error=False))
    assert screen(body).native["messages"][2] == tool_answer("call_1")


def test_tool_call_extras_are_dropped_and_missing_type_means_function():
    assistant = {"role": "assistant", "content": "Checking.", "tool_calls": [
        {"id": "call_1", "index": 0, "extra": True,
         "function": {"name": "get_weather", "arguments": "{}", "parsed_arguments": {}, "x": 1}}]}
    native = screen(messages_of(USER_HI, assistant, tool_answer("call_1"))).native
    assert native["messages"][1] == {"role": "assistant", "content": "Checking.", "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}]}


@pytest.mark.parametrize("call,code,param", [
    ({"type": "function", "function": {"name": "f", "arguments": "{}"}}, BAD, "messages[1].tool_calls[0].id"),
    ({"id": 7, "type": "function", "function": {"name": "f", "arguments": "{}"}}, BAD,
     "messages[1].tool_calls[0].id"),
    ({"id": "c", "type": "custom", "custom": {"name": "f", "input": ""}}, UNSUPPORTED,
     "messages[1].tool_calls[0].type"),
    ({"id": "c", "type": "function"}, BAD, "messages[1].tool_calls[0].function"),
    ({"id": "c", "type": "function", "function": "f"}, BAD, "messages[1].tool_calls[0].function"),
    ({"id": "c", "type": "function", "function": {"arguments": "{}"}}, BAD,
     "messages[1].tool_calls[0].function.name"),
    ({"id": "c", "type": "function", "function": {"name": "f"}}, BAD,
     "messages[1].tool_calls[0].function.arguments"),
    ({"id": "c", "type": "function", "function": {"name": "f", "arguments": {"a": 1}}}, BAD,
     "messages[1].tool_calls[0].function.arguments"),
    ("call", BAD, "messages[1].tool_calls[0]"),
])
def test_replayed_tool_call_refusals(call, code, param):
    assistant = {"role": "assistant", "content": None, "tool_calls": [call]}
    assert_refused(messages_of(USER_HI, assistant, tool_answer("c")), code, param)


def test_duplicate_tool_call_ids_in_one_message_are_refused():
    assistant = tool_round(("call_1", "call_1"))
    assert_refused(messages_of(USER_HI, assistant, tool_answer("call_1")), BAD,
                   "messages[1].tool_calls[1].id")


def test_tool_calls_must_be_an_array():
    assistant = {"role": "assistant", "content": None, "tool_calls": {"id": "x"}}
    assert_refused(messages_of(USER_HI, assistant), BAD, "messages[1].tool_calls")


@pytest.mark.parametrize("tool_message,param,message", [
    ({"role": "tool", "content": "sunny"}, "messages[2].tool_call_id",
     "Missing parameter 'tool_call_id': messages with role 'tool' must have a 'tool_call_id'."),
    ({"role": "tool", "content": "sunny", "tool_call_id": None}, "messages[2].tool_call_id", None),
    ({"role": "tool", "content": "sunny", "tool_call_id": 1}, "messages[2].tool_call_id", None),
    ({"role": "tool", "tool_call_id": "call_1"}, "messages[2].content", None),
])
def test_tool_message_refusals(tool_message, param, message):
    assert_refused(messages_of(USER_HI, tool_round(), tool_message), BAD, param, message)


# --- The OpenAI SDK's replayed messages (conformance notes, section 2) ---------------------------

SDK_STREAM_REPLAY = json.loads(
    '{"content":null,"refusal":null,"role":"assistant","annotations":null,"audio":null,'
    '"function_call":null,"tool_calls":[{"id":"call_abc","function":{"arguments":"{\\"city\\":'
    '\\"Paris\\"}","name":"get_weather","parsed_arguments":{"city":"Paris"}},"type":"function",'
    '"index":0}],"parsed":null}')
SDK_PARSE_REPLAY = json.loads(
    '{"content":"{\\"answer\\":42}","refusal":null,"role":"assistant","annotations":null,'
    '"audio":null,"function_call":null,"tool_calls":null,"parsed":null}')
SDK_CREATE_REPLAY = {"content": "Hello!", "refusal": None, "role": "assistant", "annotations": [],
                     "audio": None, "function_call": None, "tool_calls": None,
                     "reasoning_content": "The user greets me."}


def test_sdk_stream_replay_is_accepted_with_its_extras_dropped():
    body = messages_of(USER_HI, SDK_STREAM_REPLAY,
                       {"role": "tool", "tool_call_id": "call_abc", "content": "18C"})
    native = screen(make_body(messages=body["messages"], tools=[WEATHER_TOOL])).native
    assert native["messages"][1] == {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_abc", "type": "function",
         "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'}}]}


@pytest.mark.parametrize("replay,content", [
    (SDK_PARSE_REPLAY, '{"answer":42}'),
    (SDK_CREATE_REPLAY, "Hello!"),
])
def test_sdk_replays_without_tool_calls_keep_only_role_and_content(replay, content):
    native = screen(messages_of(USER_HI, replay, {"role": "user", "content": "And?"})).native
    assert native["messages"][1] == {"role": "assistant", "content": content}


def test_screening_does_not_mutate_the_body():
    body = make_body(messages=[USER_HI, copy.deepcopy(SDK_STREAM_REPLAY),
                               {"role": "tool", "tool_call_id": "call_abc", "content": "18C"}],
                     tools=[dict(WEATHER_TOOL, cache_control={})], stop="x", logprobs=False)
    before = copy.deepcopy(body)
    screen(body)
    assert body == before


# --- Tool history (OpenAI's rule) --------------------------------------------------------------------

NO_OPEN_CALLS = ("Invalid parameter: messages with role 'tool' must be a response to a preceeding "
                 "message with 'tool_calls'.")


def unanswered(*ids):
    return ("An assistant message with 'tool_calls' must be followed by tool messages responding "
            "to each 'tool_call_id'. The following tool_call_ids did not have response messages: "
            + ", ".join(ids))


@pytest.mark.parametrize("messages", [
    [USER_HI, tool_round(), tool_answer("call_1")],
    [USER_HI, tool_round(("a", "b", "c")), tool_answer("c"), tool_answer("a"), tool_answer("b"),
     {"role": "assistant", "content": "Done"}, USER_HI],
    [USER_HI, tool_round(("a",)), tool_answer("a"), tool_round(("b",)), tool_answer("b")],
    [USER_HI, tool_round(("a",)), tool_answer("a"), tool_round(("a",)), tool_answer("a")],
])
def test_valid_tool_histories(messages):
    assert screen(messages_of(*messages)).native["messages"][-1] == messages[-1]


@pytest.mark.parametrize("messages,param,message", [
    ([tool_answer("call_1")], "messages[0].role", NO_OPEN_CALLS),
    ([USER_HI, {"role": "assistant", "content": "Hi"}, tool_answer("call_1")], "messages[2].role",
     NO_OPEN_CALLS),
    ([USER_HI, tool_round(("a", "b")), tool_answer("a"), USER_HI], "messages[3].role", unanswered("b")),
    ([USER_HI, tool_round(("a", "b")), USER_HI], "messages[2].role", unanswered("a", "b")),
    ([USER_HI, tool_round(("a", "b")), tool_answer("a"), tool_answer("a")], "messages[3].role",
     NO_OPEN_CALLS),
    ([USER_HI, tool_round(("a",)), tool_answer("a"), tool_answer("a")], "messages[3].role",
     NO_OPEN_CALLS),
    ([USER_HI, tool_round(("a",)), tool_answer("a"), tool_answer("b")], "messages[3].role",
     NO_OPEN_CALLS),
    ([USER_HI, tool_round(("a", "b")), tool_answer("zzz")], "messages[2].tool_call_id",
     "Invalid parameter: 'tool_call_id' of 'zzz' not found in 'tool_calls' of previous message."),
    ([USER_HI, tool_round(("a",)), tool_answer("a"), {"role": "assistant", "content": "ok"},
      tool_answer("a")], "messages[4].role", NO_OPEN_CALLS),
    ([USER_HI, tool_round(("a", "b"))], "messages[1].role", unanswered("a", "b")),
    ([USER_HI, tool_round(("a", "b")), tool_answer("b")], "messages[1].role", unanswered("a")),
])
def test_tool_history_refusals(messages, param, message):
    assert_refused(messages_of(*messages), UNSUPPORTED, param, message)


# --- tools, tool_choice, parallel_tool_calls ------------------------------------------------------------

def function_tool(name="get_weather", **function_keys):
    return {"type": "function", "function": {"name": name, **function_keys}}


@pytest.mark.parametrize("tools,code,param,message", [
    ("get_weather", BAD, "tools", None),
    ([function_tool(f"f{i}") for i in range(129)], UNSUPPORTED, "tools",
     "Invalid 'tools': array too long. Expected an array with maximum length 128, "
     "but got an array with length 129 instead."),
    (["get_weather"], BAD, "tools[0]", None),
    ([{"function": {"name": "f"}}], BAD, "tools[0].type", "Missing required parameter: 'tools[0].type'."),
    ([function_tool(), {"type": "custom", "custom": {"name": "g"}}], UNSUPPORTED, "tools[1].type",
     "Invalid value: 'custom'. Supported values are: 'function'."),
    ([{"type": "web_search"}], UNSUPPORTED, "tools[0].type", None),
    ([{"type": "function"}], BAD, "tools[0].function", "Missing required parameter: 'tools[0].function'."),
    ([{"type": "function", "function": "f"}], BAD, "tools[0].function", None),
    ([{"type": "function", "function": {"description": "x"}}], BAD, "tools[0].function.name",
     "Missing required parameter: 'tools[0].function.name'."),
    ([function_tool("get weather")], BAD, "tools[0].function.name",
     "Invalid 'tools[0].function.name': string does not match pattern. Expected a string that "
     "matches the pattern '^[a-zA-Z0-9_-]+$'."),
    ([function_tool("f" * 67)], BAD, "tools[0].function.name",
     "Invalid 'tools[0].function.name': string too long. Expected a string with maximum length 64, "
     "but got a string with length 67 instead."),
    ([function_tool("")], BAD, "tools[0].function.name", None),
    ([function_tool(None)], BAD, "tools[0].function.name",
     "Invalid type for 'tools[0].function.name': expected a string, but got null instead."),
    ([function_tool(parameters="object")], BAD, "tools[0].function.parameters",
     "Invalid type for 'tools[0].function.parameters': expected an object, but got a string instead."),
    ([function_tool(strict="yes")], BAD, "tools[0].function.strict", None),
    ([function_tool(description=["a"])], BAD, "tools[0].function.description", None),
    ([function_tool("f"), function_tool("g"), function_tool("f")], BAD, "tools[2].function.name", None),
])
def test_tools_refusals(tools, code, param, message):
    assert_refused(make_body(tools=tools), code, param, message)


def test_tools_keep_served_keys_and_forward_parameters_unchanged():
    parameters = {"type": "object", "properties": {"city": {"type": "string", "x-vendor": 1}},
                  "required": ["city"], "$comment": "kept"}
    tool = {"type": "function", "cache_control": {"type": "ephemeral"}, "function": {
        "name": "get_weather", "description": "Weather", "parameters": parameters,
        "strict": None, "examples": [1]}}
    native = screen(make_body(tools=[tool, function_tool("f_2-x", strict=False)])).native
    assert native["tools"] == [
        {"type": "function", "function": {"name": "get_weather", "description": "Weather",
                                          "parameters": parameters}},
        {"type": "function", "function": {"name": "f_2-x", "strict": False}}]


def test_128_tools_are_accepted():
    tools = [function_tool(f"f{i}") for i in range(128)]
    assert len(screen(make_body(tools=tools)).native["tools"]) == 128


@pytest.mark.parametrize("tool_choice,code,param,message", [
    ("any", BAD, "tool_choice",
     "Invalid value: 'any'. Supported values are: 'none', 'auto', and 'required'."),
    (5, BAD, "tool_choice", None),
    ({"type": "function", "function": {"name": "nope"}}, BAD, "tool_choice", None),
    ({"type": "allowed_tools", "allowed_tools": {"mode": "auto", "tools": []}}, UNSUPPORTED,
     "tool_choice.type", None),
    ({"type": "custom", "custom": {"name": "get_weather"}}, UNSUPPORTED, "tool_choice.type", None),
    ({"function": {"name": "get_weather"}}, BAD, "tool_choice.type", None),
    ({"type": "function"}, BAD, "tool_choice.function", None),
    ({"type": "function", "function": {}}, BAD, "tool_choice.function.name", None),
    ({"type": "function", "function": {"name": 3}}, BAD, "tool_choice.function.name", None),
])
def test_tool_choice_refusals(tool_choice, code, param, message):
    assert_refused(make_body(tools=[WEATHER_TOOL], tool_choice=tool_choice), code, param, message)


@pytest.mark.parametrize("keys,param", [
    ({"tool_choice": "auto"}, "tool_choice"),
    ({"tool_choice": "none"}, "tool_choice"),
    ({"tools": [], "tool_choice": "required"}, "tool_choice"),
    ({"tools": None, "tool_choice": {"type": "function", "function": {"name": "f"}}}, "tool_choice"),
    ({"parallel_tool_calls": False}, "parallel_tool_calls"),
    ({"tools": [], "parallel_tool_calls": True}, "parallel_tool_calls"),
])
def test_tool_options_without_tools_conflict(keys, param):
    assert_refused(make_body(**keys), CONFLICT, param,
                   f"Invalid value for '{param}': '{param}' is only allowed when 'tools' are specified.")


def test_parallel_tool_calls_must_be_a_boolean():
    assert_refused(make_body(tools=[WEATHER_TOOL], parallel_tool_calls="true"), BAD,
                   "parallel_tool_calls")


def test_forced_tool_choice_drops_unknown_keys():
    choice = {"type": "function", "function": {"name": "get_weather", "strict": True}, "x": 1}
    native = screen(make_body(tools=[WEATHER_TOOL], tool_choice=choice,
                              parallel_tool_calls=False)).native
    assert native["tool_choice"] == {"type": "function", "function": {"name": "get_weather"}}
    assert native["parallel_tool_calls"] is False


def test_tool_choice_none_sends_no_tool_definitions():
    native = screen(make_body(tools=[WEATHER_TOOL], tool_choice="none",
                              parallel_tool_calls=True)).native
    assert not {"tools", "tool_choice", "parallel_tool_calls"} & set(native)


def test_tool_choice_none_still_validates_the_tools():
    assert_refused(make_body(tools=[function_tool("bad name")], tool_choice="none"), BAD,
                   "tools[0].function.name")


# --- response_format -------------------------------------------------------------------------------

def json_schema_format(schema, *, name="answer", strict=None, **extra):
    json_schema = {"name": name, "schema": schema, **extra}
    if strict is not None:
        json_schema["strict"] = strict
    return {"type": "json_schema", "json_schema": json_schema}


STRICT_OK = {"type": "object", "additionalProperties": False, "required": ["a", "b"],
             "properties": {"a": {"type": ["string", "null"]},
                            "b": {"type": "array", "items": {"$ref": "#/$defs/item"}}},
             "$defs": {"item": {"type": "object", "additionalProperties": False,
                                "required": ["x"], "properties": {"x": {"type": "integer"}}}}}


@pytest.mark.parametrize("response_format,code,param,message", [
    (None, BAD, "response_format",
     "Invalid type for 'response_format': expected an object, but got null instead."),
    ("json_object", BAD, "response_format", None),
    ({}, BAD, "response_format.type", "Missing required parameter: 'response_format.type'."),
    ({"type": 1}, BAD, "response_format.type", None),
    ({"type": "grammar", "grammar": "root ::= x"}, UNSUPPORTED, "response_format.type", None),
    ({"type": "regex"}, UNSUPPORTED, "response_format.type", None),
    ({"type": "text", "x": 1}, UNSUPPORTED, "response_format.x", "Unknown parameter: 'response_format.x'."),
    ({"type": "json_object", "schema": {}}, UNSUPPORTED, "response_format.schema", None),
    ({"type": "json_object", "json_schema": {}}, UNSUPPORTED, "response_format.json_schema", None),
    ({"type": "json_schema"}, BAD, "response_format.json_schema",
     "Missing required parameter: 'response_format.json_schema'."),
    ({"type": "json_schema", "json_schema": "x"}, BAD, "response_format.json_schema", None),
    (json_schema_format({}, extra_key=1), UNSUPPORTED, "response_format.json_schema.extra_key",
     "Unknown parameter: 'response_format.json_schema.extra_key'."),
    ({"type": "json_schema", "json_schema": {"schema": {}}}, BAD, "response_format.json_schema.name",
     "Missing required parameter: 'response_format.json_schema.name'."),
    ({"type": "json_schema", "json_schema": {"name": "a"}}, BAD, "response_format.json_schema.schema",
     "Missing required parameter: 'response_format.json_schema.schema'."),
    (json_schema_format({}, name="has space"), BAD, "response_format.json_schema.name",
     "Invalid 'response_format.json_schema.name': string does not match pattern. Expected a string "
     "that matches the pattern '^[a-zA-Z0-9_-]+$'."),
    (json_schema_format({}, name="n" * 65), BAD, "response_format.json_schema.name", None),
    (json_schema_format("{}"), BAD, "response_format.json_schema.schema", None),
    (json_schema_format(None), BAD, "response_format.json_schema.schema", None),
    (json_schema_format({}, strict="true"), BAD, "response_format.json_schema.strict", None),
    (json_schema_format({}, description=1), BAD, "response_format.json_schema.description", None),
])
def test_response_format_refusals(response_format, code, param, message):
    assert_refused(make_body(response_format=response_format), code, param, message)


@pytest.mark.parametrize("response_format,native", [
    ({"type": "text"}, None),
    ({"type": "json_object"}, {"type": "json_object"}),
    (json_schema_format({"type": "object"}), json_schema_format({"type": "object"})),
    (json_schema_format(STRICT_OK, strict=True, description="The answer"),
     json_schema_format(STRICT_OK, strict=True, description="The answer")),
    (json_schema_format({"type": "array"}, strict=False, description=None),
     json_schema_format({"type": "array"}, strict=False)),
])
def test_response_format_accepted(response_format, native):
    assert screen(make_body(response_format=response_format)).native.get("response_format") == native


# --- Strict schemas ------------------------------------------------------------------------------------

def organizations_schema():
    return {"type": "object", "additionalProperties": False, "required": ["organizations"],
            "properties": {"organizations": {"type": "array", "items": {
                "type": "object", "additionalProperties": False, "required": ["name"],
                "properties": {"name": {"type": "string"}, "roles": {"type": "array"}}}}}}


def with_defs(key):
    return {"type": "object", "additionalProperties": False, "required": ["p"],
            "properties": {"p": {"$ref": f"#/{key}/P"}},
            key: {"P": {"type": "object", "properties": {}}}}


@pytest.mark.parametrize("schema,detail", [
    ({"type": "object", "properties": {}}, "In context=(), 'additionalProperties' is required to be "
     "supplied and to be false."),
    ({"type": "object", "properties": {}, "additionalProperties": True}, "In context=(), "
     "'additionalProperties' is required to be supplied and to be false."),
    ({"type": "object", "properties": {}, "additionalProperties": 0}, "In context=(), "
     "'additionalProperties' is required to be supplied and to be false."),
    (organizations_schema(), "In context=('properties', 'organizations', 'items'), 'required' is "
     "required to be supplied and to be an array including every key in properties. Missing 'roles'."),
    ({"type": "object", "additionalProperties": False, "properties": {"a": {"type": "string"}}},
     "In context=(), 'required' is required to be supplied and to be an array including every key "
     "in properties. Missing 'a'."),
    ({"type": "object", "additionalProperties": False, "required": ["a"], "properties": {
        "a": {"anyOf": [{"type": "string"}, {"type": "object", "properties": {}}]}}},
     "In context=('properties', 'a', 'anyOf', 1), 'additionalProperties' is required to be "
     "supplied and to be false."),
    (with_defs("$defs"), "In context=('$defs', 'P'), 'additionalProperties' is required to be "
     "supplied and to be false."),
    (with_defs("definitions"), "In context=('definitions', 'P'), 'additionalProperties' is required "
     "to be supplied and to be false."),
    ({"type": "array", "items": {"type": "string"}},
     "schema must be a JSON Schema of 'type: \"object\"', got 'type: \"array\"'."),
    ({"anyOf": [{"type": "object"}]}, "schema must be a JSON Schema of 'type: \"object\"', "
     "got 'type: \"None\"'."),
])
def test_strict_schema_rules(schema, detail):
    assert_refused(make_body(response_format=json_schema_format(schema, name="NAME", strict=True)),
                   UNSUPPORTED, "response_format", f"Invalid schema for response_format 'NAME': {detail}")
    tool = function_tool("NAME", parameters=schema, strict=True)
    assert_refused(make_body(tools=[WEATHER_TOOL, tool]), UNSUPPORTED, "tools[1].function.parameters",
                   f"Invalid schema for function 'NAME': {detail}")


@pytest.mark.parametrize("strict", [False, None])
def test_non_strict_schemas_need_not_follow_the_strict_rules(strict):
    schema = organizations_schema()
    assert screen(make_body(response_format=json_schema_format(schema, strict=strict)))
    assert screen(make_body(tools=[function_tool(parameters=schema, strict=strict)]))


def test_a_strict_schema_following_the_rules_is_accepted():
    assert screen(make_body(response_format=json_schema_format(STRICT_OK, strict=True)))
    assert screen(make_body(tools=[function_tool(parameters=STRICT_OK, strict=True)]))


# --- Schema depth and payload size -------------------------------------------------------------------

@pytest.mark.parametrize("strict", [False, True])
def test_schema_depth_limit_for_response_format(strict):
    ok = nested_properties_schema(MAX_SCHEMA_DEPTH // 2, strict_ready=True)
    ok = {"type": "object", "additionalProperties": False, "required": ["a"], "properties": {"a": ok}}
    assert screen(make_body(response_format=json_schema_format(ok, strict=strict)))
    deep = nested_properties_schema(11, strict_ready=True)
    error = assert_refused(make_body(response_format=json_schema_format(deep, strict=strict)),
                           UNSUPPORTED, "response_format")
    assert error.message.startswith("Invalid schema for response_format 'answer': ")
    assert "at most 10" in error.message


@pytest.mark.parametrize("levels,accepted", [(9, True), (10, True), (11, False), (40, False)])
def test_schema_depth_limit_for_tool_parameters(levels, accepted):
    # The innermost {"type": "string"} sits ``levels`` subschema steps below the root.
    schema = nested_properties_schema(levels)
    body = make_body(tools=[function_tool(parameters=schema)])
    if accepted:
        assert screen(body).native["tools"][0]["function"]["parameters"] == schema
    else:
        error = assert_refused(body, UNSUPPORTED, "tools[0].function.parameters")
        assert error.message.startswith("Invalid schema for function 'get_weather': ")


@pytest.mark.parametrize("step", [
    lambda inner: {"type": "array", "items": inner},
    lambda inner: {"anyOf": [{"type": "null"}, inner]},
    lambda inner: {"type": "object", "additionalProperties": inner},
    lambda inner: {"$defs": {"d": inner}},
])
def test_every_subschema_keyword_counts_as_a_level(step):
    schema = {"type": "string"}
    for _ in range(MAX_SCHEMA_DEPTH):
        schema = step(schema)
    assert screen(make_body(tools=[function_tool(parameters=schema)]))
    assert_refused(make_body(tools=[function_tool(parameters=step(schema))]), UNSUPPORTED,
                   "tools[0].function.parameters")


def test_non_schema_values_do_not_count_as_levels():
    deep_default = [[[[[[[[[[[[["x"]]]]]]]]]]]]]
    schema = {"type": "object", "properties": {"a": {"type": "array", "default": deep_default,
                                                     "enum": [deep_default]}}}
    assert screen(make_body(tools=[function_tool(parameters=schema)]))


def test_a_very_deep_schema_is_refused_not_crashed():
    schema = nested_properties_schema(400)
    assert_refused(make_body(tools=[function_tool(parameters=schema)]), UNSUPPORTED,
                   "tools[0].function.parameters")
    assert_refused(make_body(response_format=json_schema_format(schema, strict=True)),
                   UNSUPPORTED, "response_format")


def padded_tool(description_chars):
    return function_tool(description="d" * description_chars, parameters={"type": "object"})


def test_tools_payload_size_limit_is_inclusive():
    base = tools_payload_bytes([padded_tool(0)], "auto", {"type": "json_object"})
    room = TOOLS_PAYLOAD_MAX_BYTES - base
    at_limit = make_body(tools=[padded_tool(room)], tool_choice="auto",
                         response_format={"type": "json_object"})
    assert screen(at_limit)
    over = make_body(tools=[padded_tool(room + 1)], tool_choice="auto",
                     response_format={"type": "json_object"})
    error = assert_refused(over, UNSUPPORTED, "tools")
    assert str(TOOLS_PAYLOAD_MAX_BYTES) in error.message


def test_payload_size_counts_the_whole_payload_across_tools():
    tools = [padded_tool(70_000) for _ in range(4)]
    for index, tool in enumerate(tools):
        tool["function"]["name"] = f"f{index}"
    assert_refused(make_body(tools=tools), UNSUPPORTED, "tools")


def test_payload_size_is_reported_at_response_format_without_tools():
    schema = {"type": "object", "description": "x" * TOOLS_PAYLOAD_MAX_BYTES}
    assert_refused(make_body(response_format=json_schema_format(schema)), UNSUPPORTED,
                   "response_format")


def test_payload_size_counts_what_is_forwarded_not_dropped_keys():
    tool = dict(function_tool(parameters={"type": "object"}), cache_control="x" * 300_000)
    assert screen(make_body(tools=[tool]))


def test_payload_size_counts_non_ascii_as_json_escapes():
    tool = function_tool(description="é" * 50_000)  # 6 bytes each as \u00e9
    assert_refused(make_body(tools=[tool]), UNSUPPORTED, "tools")


# --- The horde object ----------------------------------------------------------------------------------

@pytest.mark.parametrize("key", ["dry_run", "operation_key", "priority", "models", "Only"])
def test_unknown_horde_keys_are_refused(key):
    assert_refused(make_body(horde={key: True}), UNSUPPORTED, f"horde.{key}",
                   f"Unknown parameter: 'horde.{key}'.")


@pytest.mark.parametrize("key,value,message", [
    ("only", "worker-1", "Invalid type for 'horde.only': expected an array of strings, "
     "but got a string instead."),
    ("only", [], "Invalid 'horde.only': empty array. Expected an array with minimum length 1, "
     "but got an empty array instead."),
    ("only", [1], None),
    ("only", [""], None),
    ("trusted_workers", "yes", "Invalid type for 'horde.trusted_workers': expected a boolean, "
     "but got a string instead."),
    ("trusted_workers", 1, None),
    ("context_fitting", "shrink", "Invalid value: 'shrink'. Supported values are: 'truncate_oldest', "
     "'grow', and 'reject'."),
    ("context_fitting", 1, None),
    ("max_kudos", 0, "Invalid 'horde.max_kudos': integer below minimum value. Expected a value >= 1, "
     "but got 0 instead."),
    ("max_kudos", -5, None),
    ("max_kudos", 1.5, "Invalid type for 'horde.max_kudos': expected an integer, but got a decimal "
     "instead."),
    ("max_kudos", True, None),
    ("max_kudos", "10", None),
    ("include_reasoning", "false", None),
    ("conformance", "loose", "Invalid value: 'loose'. Supported values are: 'strict' and 'best_effort'."),
    ("openai_guards", 0, None),
    ("availability_mode", "later", "Invalid value: 'later'. Supported values are: 'fail_fast' and 'wait'."),
])
def test_horde_option_value_refusals(key, value, message):
    assert_refused(make_body(horde={key: value}), BAD, f"horde.{key}", message)


@pytest.mark.parametrize("horde", ["fast", [], 1, None, True])
def test_horde_must_be_an_object(horde):
    assert_refused(make_body(horde=horde), BAD, "horde")


def test_the_first_bad_horde_key_in_body_order_is_reported():
    assert_refused(make_body(horde={"conformance": "x", "dry_run": True}), BAD, "horde.conformance")
    assert_refused(make_body(horde={"dry_run": True, "conformance": "x"}), UNSUPPORTED, "horde.dry_run")


def test_horde_options_go_into_native_with_defaults():
    native = screen(make_body()).native
    assert {key: native[key] for key in ("trusted_workers", "context_fitting", "conformance",
                                         "availability_mode")} == {
        "trusted_workers": False, "context_fitting": "truncate_oldest", "conformance": "strict",
        "availability_mode": "fail_fast"}
    assert "only" not in native and "max_kudos" not in native


def test_horde_options_sent_are_forwarded():
    horde = {"only": ["w1", "w2"], "trusted_workers": True, "context_fitting": "reject",
             "max_kudos": 40, "include_reasoning": False, "conformance": "best_effort",
             "openai_guards": True, "availability_mode": "wait"}
    screened = screen(make_body(horde=horde))
    assert screened.include_reasoning is False
    for key in ("only", "trusted_workers", "context_fitting", "max_kudos", "conformance",
                "availability_mode"):
        assert screened.native[key] == horde[key]
    assert "include_reasoning" not in screened.native and "openai_guards" not in screened.native


def test_horde_options_sent_as_null_take_their_defaults():
    screened = screen(make_body(horde={"include_reasoning": None, "only": None, "conformance": None}))
    assert screened.include_reasoning is True
    assert screened.native["conformance"] == "strict" and "only" not in screened.native


# --- openai_guards ----------------------------------------------------------------------------------------

JSON_WORD = ("'messages' must contain the word 'json' in some form, to use 'response_format' of type "
             "'json_object'.")


def test_openai_guards_refuse_json_object_without_the_word_json():
    body = make_body(response_format={"type": "json_object"}, horde={"openai_guards": True})
    assert_refused(body, BAD, "messages", JSON_WORD)


@pytest.mark.parametrize("messages", [
    [{"role": "system", "content": "Reply in JSON."}, USER_HI],
    [{"role": "user", "content": [{"type": "text", "text": "give me json"}]}],
    [{"role": "developer", "content": "Use a JsOn object"}, USER_HI],
])
def test_openai_guards_accept_a_mention_of_json(messages):
    body = make_body(messages=messages, response_format={"type": "json_object"},
                     horde={"openai_guards": True})
    assert screen(body).native["response_format"] == {"type": "json_object"}


@pytest.mark.parametrize("keys", [
    {"response_format": {"type": "json_object"}},
    {"response_format": {"type": "json_object"}, "horde": {"openai_guards": False}},
    {"response_format": json_schema_format({"type": "object"}), "horde": {"openai_guards": True}},
])
def test_without_guards_or_json_object_the_word_is_not_needed(keys):
    assert screen(make_body(**keys))


# --- The error object ------------------------------------------------------------------------------------

def test_screening_error_defaults_and_attributes():
    error = ScreeningError("no")
    assert (error.message, error.status, error.code, error.param) == (
        "no", 400, "UnsupportedChatParameter", None)
    assert str(error) == "no"
    error = ScreeningError("gone", status=404, code="model_not_found", param="model")
    assert (error.status, error.code, error.param) == (404, "model_not_found", "model")


# --- Fuzzing: any JSON gives a ScreenedRequest or a ScreeningError ---------------------------------

def rich_body():
    return make_body(
        messages=[{"role": "system", "content": "json"},
                  {"role": "user", "content": [{"type": "text", "text": "hi"},
                                               {"type": "image_url", "image_url": {"url": "https://x/y.png"}}]},
                  tool_round(("a",)), tool_answer("a")],
        tools=[function_tool(parameters=copy.deepcopy(STRICT_OK), strict=True)],
        tool_choice="auto", parallel_tool_calls=True, max_tokens=64, temperature=0.5, stop=["x"],
        stream=True, stream_options={"include_usage": True}, seed=3, reasoning_effort="low",
        response_format=json_schema_format(copy.deepcopy(STRICT_OK), strict=True),
        horde={"only": ["w"], "openai_guards": True}, logprobs=False)


def assert_screens_or_refuses(body):
    try:
        screened = screen_chat_request(body)
    except ScreeningError as error:
        assert isinstance(error.message, str) and error.message
        assert error.status in (400, 404)
        assert error.param is None or isinstance(error.param, str)
        return
    json.dumps(screened.native)  # the native request is plain JSON


def test_the_rich_body_is_accepted():
    assert screen(rich_body()).native["tool_choice"] == "auto"


@pytest.mark.parametrize("seed", range(20))
def test_fuzz_random_json_bodies(seed):
    rng = random.Random(seed)
    for _ in range(150):
        assert_screens_or_refuses(random_json(rng))
        extra = random_json(rng, 4)
        body = {"model": "m", "messages": [random_json(rng)]}
        body.update(extra if isinstance(extra, dict) else {})
        assert_screens_or_refuses(body)


@pytest.mark.parametrize("seed", range(20))
def test_fuzz_mutated_valid_bodies(seed):
    rng = random.Random(1000 + seed)
    for _ in range(150):
        body = rich_body()
        for _ in range(rng.randint(1, 3)):
            body = mutate(rng, body)
        assert_screens_or_refuses(body)


def test_deeply_nested_json_anywhere_is_handled():
    deep = "x"
    for _ in range(300):
        deep = [deep]
    for body in (make_body(messages=[{"role": "user", "content": deep}]),
                 make_body(tools=[function_tool(parameters={"type": "object", "default": deep})]),
                 make_body(horde={"only": deep}), make_body(stop=deep), deep):
        assert_screens_or_refuses(body)
