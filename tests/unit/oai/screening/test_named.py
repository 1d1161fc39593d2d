"""What the chat screening accepts without acting on it is named; defaults and replayed output are not
(horde/oai/screening/, horde/oai/ignored.py)."""

from __future__ import annotations

import pytest

from horde.chat.conversation import CONVERSATION_KEY_MAX_CHARS
from horde.oai.screening import DEFAULT_NO_OP_PARAMETERS
from tests.support.screening import BAD, UNSUPPORTED, USER_HI, WEATHER_TOOL, assert_refused, make_body, screen

#: Every value of the no-op table (each key's first), and the nullable keys sent as null.
DEFAULTS = {key: values[0] for key, values in DEFAULT_NO_OP_PARAMETERS.items()} | {
    "n": 1,
    "user": None,
    "prompt_cache_key": None,
}


def test_defaults_that_change_nothing_are_not_named():
    assert screen(make_body(**DEFAULTS)).ignored.paths == []


def test_settings_the_horde_does_not_act_on_are_named():
    screened = screen(make_body(user="end-user-7", prompt_cache_key="session-1", store=False))
    # prompt_cache_key is acted on: it names the conversation (horde/oai/conversation.py), so it is not named
    assert screened.ignored.paths == ["user"]
    assert "prompt_cache_key" not in screened.native and "user" not in screened.native


@pytest.mark.parametrize(
    "value,code,message",
    [
        (7, BAD, "Invalid type for 'prompt_cache_key': expected a string, but got an integer instead."),
        ("k" * (CONVERSATION_KEY_MAX_CHARS + 1), BAD, None),
    ],
)
def test_a_bad_prompt_cache_key_is_refused(value, code, message):
    assert_refused(make_body(prompt_cache_key=value), code, "prompt_cache_key", message)


def test_an_unknown_key_is_still_refused():
    assert_refused(make_body(prompt_cache_retention="24h"), UNSUPPORTED, "prompt_cache_retention")


def test_keys_dropped_from_a_tool_definition_are_named():
    tool = dict(WEATHER_TOOL, cache_control={"type": "ephemeral"})
    tool["function"] = dict(WEATHER_TOOL["function"], defer_loading=True)
    choice = {"type": "function", "function": {"name": "get_weather", "hint": 1}, "extra": True}
    screened = screen(make_body(tools=[tool], tool_choice=choice))
    assert screened.ignored.paths == [
        "tools[0].cache_control",
        "tools[0].function.defer_loading",
        "tool_choice.extra",
        "tool_choice.function.hint",
    ]
    assert screened.native["tools"] == [WEATHER_TOOL]


def test_keys_dropped_from_messages_are_named_except_replayed_output():
    replayed = {
        "role": "assistant",
        "content": "Sunny.",
        "refusal": None,
        "annotations": [],
        "reasoning_content": "It is sunny.",
        "audio": None,
        "function_call": None,
    }
    part = {"type": "text", "text": "More?", "cache_control": {"type": "ephemeral"}}
    image = {"type": "image_url", "image_url": {"url": "https://example.com/a.png", "fmt": "png"}}
    messages = [USER_HI, replayed, {"role": "user", "content": [part, image], "vendor_hint": 1}]
    assert screen(make_body(messages=messages)).ignored.paths == [
        "messages[2].vendor_hint",
        "messages[2].content[0].cache_control",
        "messages[2].content[1].image_url.fmt",
    ]


def test_replayed_tool_calls_and_tool_names_are_not_named():
    call = {
        "id": "call_1",
        "type": "function",
        "index": 0,
        "function": {"name": "get_weather", "arguments": "{}", "parsed_arguments": {}},
    }
    messages = [
        USER_HI,
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_1", "name": "get_weather", "content": "sunny"},
    ]
    assert screen(make_body(messages=messages, tools=[WEATHER_TOOL])).ignored.paths == []


def test_the_token_limit_is_named_as_sent():
    assert screen(make_body(max_completion_tokens=64)).ignored.token_param == "max_completion_tokens"
    assert screen(make_body(max_tokens=64)).ignored.token_param == "max_tokens"
    assert screen(make_body()).ignored.token_param == "max_tokens"
