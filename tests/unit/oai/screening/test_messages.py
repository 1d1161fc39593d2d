"""Screening of messages: roles, keys, content parts, dropped keys and the SDK's replays
(horde/oai/screening/messages.py)."""

from __future__ import annotations

import copy
import json

import pytest

from tests.support.screening import (
    BAD,
    UNSUPPORTED,
    USER_HI,
    WEATHER_TOOL,
    assert_refused,
    make_body,
    messages_of,
    screen,
    tool_answer,
    tool_round,
)

# --- Messages: roles, keys and content -------------------------------------------------------------

ROLE_ENUM = "Supported values are: 'system', 'developer', 'user', 'assistant', and 'tool'."


@pytest.mark.parametrize(
    "messages,code,param,message",
    [
        ("Hi", BAD, "messages", "Invalid type for 'messages': expected an array, but got a string instead."),
        (
            [],
            BAD,
            "messages",
            "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.",
        ),
        (["Hi"], BAD, "messages[0]", "Invalid type for 'messages[0]': expected an object, but got a string instead."),
        ([{"content": "Hi"}], BAD, "messages[0].role", "Missing required parameter: 'messages[0].role'."),
        ([{"role": 1, "content": "Hi"}], BAD, "messages[0].role", None),
        (
            [USER_HI, {"role": "function", "name": "f", "content": "x"}],
            UNSUPPORTED,
            "messages[1].role",
            f"Invalid value: 'function'. {ROLE_ENUM}",
        ),
        ([{"role": "bogus", "content": "x"}], UNSUPPORTED, "messages[0].role", f"Invalid value: 'bogus'. {ROLE_ENUM}"),
        ([{"role": "User", "content": "x"}], UNSUPPORTED, "messages[0].role", None),
        ([{"role": "user"}], BAD, "messages[0].content", "Missing required parameter: 'messages[0].content'."),
        ([{"role": "user", "content": None}], BAD, "messages[0].content", None),
        ([{"role": "system", "content": 5}], BAD, "messages[0].content", None),
        (
            [{"role": "user", "content": []}],
            BAD,
            "messages[0].content",
            "Invalid 'messages[0].content': empty array. Expected an array with minimum length 1, "
            "but got an empty array instead.",
        ),
        ([{"role": "user", "content": ["Hi"]}], BAD, "messages[0].content[0]", None),
        (
            [{"role": "user", "content": [{"text": "Hi"}]}],
            BAD,
            "messages[0].content[0].type",
            "Missing required parameter: 'messages[0].content[0].type'.",
        ),
        ([{"role": "user", "content": [{"type": "text"}]}], BAD, "messages[0].content[0].text", None),
        ([{"role": "user", "content": [{"type": "text", "text": 5}]}], BAD, "messages[0].content[0].text", None),
        ([{"role": "user", "content": "Hi", "name": 5}], BAD, "messages[0].name", None),
        ([{"role": "assistant"}], BAD, "messages[0].content", None),
        ([{"role": "assistant", "content": None}], BAD, "messages[0].content", None),
        ([{"role": "assistant", "content": None, "tool_calls": []}], BAD, "messages[0].content", None),
    ],
)
def test_message_refusals(messages, code, param, message):
    assert_refused(make_body(messages=messages), code, param, message)


@pytest.mark.parametrize(
    "message",
    [
        {"role": "user", "content": "Hi", "tool_calls": []},
        {"role": "user", "content": "Hi", "tool_calls": None},
        {"role": "system", "content": "Be brief", "tool_calls": tool_round()["tool_calls"]},
        {"role": "developer", "content": "Be brief", "tool_calls": []},
    ],
)
def test_tool_calls_on_a_non_assistant_message_is_refused(message):
    assert_refused(messages_of(message, USER_HI), UNSUPPORTED, "messages[0].tool_calls")


def test_tool_calls_on_a_tool_message_is_refused():
    body = messages_of(USER_HI, tool_round(), dict(tool_answer("call_1"), tool_calls=[]))
    assert_refused(body, UNSUPPORTED, "messages[2].tool_calls")


@pytest.mark.parametrize(
    "role,part,param",
    [
        (
            "user",
            {"type": "input_audio", "input_audio": {"data": "AAAA", "format": "wav"}},
            "messages[0].content[0].type=input_audio",
        ),
        ("user", {"type": "file", "file": {"file_id": "f"}}, "messages[0].content[0].type=file"),
        (
            "user",
            {"type": "video_url", "video_url": {"url": "https://x/v.mp4"}},
            "messages[0].content[0].type=video_url",
        ),
        ("user", {"type": "TEXT", "text": "x"}, "messages[0].content[0].type=TEXT"),
        (
            "system",
            {"type": "image_url", "image_url": {"url": "https://x/a.png"}},
            "messages[0].content[0].type=image_url",
        ),
        (
            "developer",
            {"type": "image_url", "image_url": {"url": "https://x/a.png"}},
            "messages[0].content[0].type=image_url",
        ),
        ("assistant", {"type": "refusal", "refusal": "no"}, "messages[0].content[0].type=refusal"),
        (
            "assistant",
            {"type": "image_url", "image_url": {"url": "https://x/a.png"}},
            "messages[0].content[0].type=image_url",
        ),
    ],
)
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


@pytest.mark.parametrize(
    "image_url,param",
    [
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
    ],
)
def test_image_url_refusals(image_url, param):
    content = [{"type": "text", "text": "What is it?"}, {"type": "image_url", "image_url": image_url}]
    assert_refused(messages_of({"role": "user", "content": content}), BAD, f"messages[0].content[1].image_url.{param}")


@pytest.mark.parametrize(
    "part,param",
    [
        ({"type": "image_url"}, "messages[0].content[0].image_url"),
        ({"type": "image_url", "image_url": "https://example.com/a.png"}, "messages[0].content[0].image_url"),
    ],
)
def test_image_part_needs_an_image_url_object(part, param):
    assert_refused(messages_of({"role": "user", "content": [part]}), BAD, param)


@pytest.mark.parametrize(
    "url",
    [
        "https://example.com/cat.png",
        "http://example.com/a?b=c",
        "HTTPS://EXAMPLE.COM/A.PNG",
        "data:image/png;base64,iVBORw0KGgo=",
        "data:image/svg+xml;base64,PHN2Zz4=",
    ],
)
def test_image_urls_accepted(url):
    content = [{"type": "image_url", "image_url": {"url": url, "detail": None}}]
    native = screen(messages_of({"role": "user", "content": content})).native
    assert native["messages"][0]["content"] == [{"type": "image_url", "image_url": {"url": url}}]


# --- Messages: dropped keys and normalization ---------------------------------------------------


def test_unknown_message_keys_and_part_keys_are_dropped():
    messages = [
        {"role": "developer", "content": "Be brief.", "name": "policy", "weight": 1},
        {"role": "system", "content": [{"type": "text", "text": "Rules", "cache_control": {"type": "ephemeral"}}]},
        {
            "role": "user",
            "name": "ann",
            "content": [
                {"type": "text", "text": "Look", "annotations": []},
                {
                    "type": "image_url",
                    "extra": 1,
                    "image_url": {"url": "https://example.com/a.png", "detail": "low", "format": "png"},
                },
            ],
            "tool_call_id": "stray",
            "metadata": {"x": 1},
        },
        {
            "role": "assistant",
            "content": "Sure.",
            "name": "bot",
            "refusal": None,
            "reasoning_content": "thinking",
            "audio": None,
            "annotations": [],
            "prefix": True,
        },
        USER_HI,
    ]
    native = screen(make_body(messages=messages)).native
    assert native["messages"] == [
        {"role": "system", "content": "Be brief.", "name": "policy"},
        {"role": "system", "content": [{"type": "text", "text": "Rules"}]},
        {
            "role": "user",
            "name": "ann",
            "content": [
                {"type": "text", "text": "Look"},
                {"type": "image_url", "image_url": {"url": "https://example.com/a.png", "detail": "low"}},
            ],
        },
        {"role": "assistant", "content": "Sure.", "name": "bot"},
        USER_HI,
    ]


def test_tool_message_name_and_extras_are_dropped():
    body = messages_of(USER_HI, tool_round(), dict(tool_answer("call_1"), name="get_weather", is_error=False))
    assert screen(body).native["messages"][2] == tool_answer("call_1")


def test_tool_call_extras_are_dropped_and_missing_type_means_function():
    assistant = {
        "role": "assistant",
        "content": "Checking.",
        "tool_calls": [
            {
                "id": "call_1",
                "index": 0,
                "extra": True,
                "function": {"name": "get_weather", "arguments": "{}", "parsed_arguments": {}, "x": 1},
            }
        ],
    }
    native = screen(messages_of(USER_HI, assistant, tool_answer("call_1"))).native
    assert native["messages"][1] == {
        "role": "assistant",
        "content": "Checking.",
        "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}],
    }


@pytest.mark.parametrize(
    "call,code,param",
    [
        ({"type": "function", "function": {"name": "f", "arguments": "{}"}}, BAD, "messages[1].tool_calls[0].id"),
        (
            {"id": 7, "type": "function", "function": {"name": "f", "arguments": "{}"}},
            BAD,
            "messages[1].tool_calls[0].id",
        ),
        (
            {"id": "c", "type": "custom", "custom": {"name": "f", "input": ""}},
            UNSUPPORTED,
            "messages[1].tool_calls[0].type",
        ),
        ({"id": "c", "type": "function"}, BAD, "messages[1].tool_calls[0].function"),
        ({"id": "c", "type": "function", "function": "f"}, BAD, "messages[1].tool_calls[0].function"),
        (
            {"id": "c", "type": "function", "function": {"arguments": "{}"}},
            BAD,
            "messages[1].tool_calls[0].function.name",
        ),
        (
            {"id": "c", "type": "function", "function": {"name": "f"}},
            BAD,
            "messages[1].tool_calls[0].function.arguments",
        ),
        (
            {"id": "c", "type": "function", "function": {"name": "f", "arguments": {"a": 1}}},
            BAD,
            "messages[1].tool_calls[0].function.arguments",
        ),
        ("call", BAD, "messages[1].tool_calls[0]"),
    ],
)
def test_replayed_tool_call_refusals(call, code, param):
    assistant = {"role": "assistant", "content": None, "tool_calls": [call]}
    assert_refused(messages_of(USER_HI, assistant, tool_answer("c")), code, param)


def test_duplicate_tool_call_ids_in_one_message_are_refused():
    assistant = tool_round(("call_1", "call_1"))
    assert_refused(messages_of(USER_HI, assistant, tool_answer("call_1")), BAD, "messages[1].tool_calls[1].id")


def test_tool_calls_must_be_an_array():
    assistant = {"role": "assistant", "content": None, "tool_calls": {"id": "x"}}
    assert_refused(messages_of(USER_HI, assistant), BAD, "messages[1].tool_calls")


@pytest.mark.parametrize(
    "tool_message,param,message",
    [
        (
            {"role": "tool", "content": "sunny"},
            "messages[2].tool_call_id",
            "Missing parameter 'tool_call_id': messages with role 'tool' must have a 'tool_call_id'.",
        ),
        ({"role": "tool", "content": "sunny", "tool_call_id": None}, "messages[2].tool_call_id", None),
        ({"role": "tool", "content": "sunny", "tool_call_id": 1}, "messages[2].tool_call_id", None),
        ({"role": "tool", "tool_call_id": "call_1"}, "messages[2].content", None),
    ],
)
def test_tool_message_refusals(tool_message, param, message):
    assert_refused(messages_of(USER_HI, tool_round(), tool_message), BAD, param, message)


# --- The OpenAI SDK's replayed messages (docs/reference/chat_front.md) ------------------------------

SDK_STREAM_REPLAY = json.loads(
    '{"content":null,"refusal":null,"role":"assistant","annotations":null,"audio":null,'
    '"function_call":null,"tool_calls":[{"id":"call_abc","function":{"arguments":"{\\"city\\":'
    '\\"Paris\\"}","name":"get_weather","parsed_arguments":{"city":"Paris"}},"type":"function",'
    '"index":0}],"parsed":null}'
)
SDK_PARSE_REPLAY = json.loads(
    '{"content":"{\\"answer\\":42}","refusal":null,"role":"assistant","annotations":null,'
    '"audio":null,"function_call":null,"tool_calls":null,"parsed":null}'
)
SDK_CREATE_REPLAY = {
    "content": "Hello!",
    "refusal": None,
    "role": "assistant",
    "annotations": [],
    "audio": None,
    "function_call": None,
    "tool_calls": None,
    "reasoning_content": "The user greets me.",
}


def test_sdk_stream_replay_is_accepted_with_its_extras_dropped():
    body = messages_of(USER_HI, SDK_STREAM_REPLAY, {"role": "tool", "tool_call_id": "call_abc", "content": "18C"})
    native = screen(make_body(messages=body["messages"], tools=[WEATHER_TOOL])).native
    assert native["messages"][1] == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "call_abc", "type": "function", "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'}}
        ],
    }


@pytest.mark.parametrize(
    "replay,content",
    [
        (SDK_PARSE_REPLAY, '{"answer":42}'),
        (SDK_CREATE_REPLAY, "Hello!"),
    ],
)
def test_sdk_replays_without_tool_calls_keep_only_role_and_content(replay, content):
    native = screen(messages_of(USER_HI, replay, {"role": "user", "content": "And?"})).native
    assert native["messages"][1] == {"role": "assistant", "content": content}


def test_screening_does_not_mutate_the_body():
    body = make_body(
        messages=[
            USER_HI,
            copy.deepcopy(SDK_STREAM_REPLAY),
            {"role": "tool", "tool_call_id": "call_abc", "content": "18C"},
        ],
        tools=[dict(WEATHER_TOOL, cache_control={})],
        stop="x",
        logprobs=False,
    )
    before = copy.deepcopy(body)
    screen(body)
    assert body == before
