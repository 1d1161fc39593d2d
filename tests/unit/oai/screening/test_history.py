"""OpenAI's rule for tool-call history (horde/oai/screening/history.py)."""

from __future__ import annotations

import pytest

from tests.support.screening import (
    UNSUPPORTED,
    USER_HI,
    assert_refused,
    messages_of,
    screen,
    tool_answer,
    tool_round,
)

NO_OPEN_CALLS = (
    "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'."
)


def unanswered(*ids):
    return (
        "An assistant message with 'tool_calls' must be followed by tool messages responding "
        "to each 'tool_call_id'. The following tool_call_ids did not have response messages: " + ", ".join(ids)
    )


@pytest.mark.parametrize(
    "messages",
    [
        [USER_HI, tool_round(), tool_answer("call_1")],
        [
            USER_HI,
            tool_round(("a", "b", "c")),
            tool_answer("c"),
            tool_answer("a"),
            tool_answer("b"),
            {"role": "assistant", "content": "Done"},
            USER_HI,
        ],
        [USER_HI, tool_round(("a",)), tool_answer("a"), tool_round(("b",)), tool_answer("b")],
        [USER_HI, tool_round(("a",)), tool_answer("a"), tool_round(("a",)), tool_answer("a")],
    ],
)
def test_valid_tool_histories(messages):
    assert screen(messages_of(*messages)).native["messages"][-1] == messages[-1]


@pytest.mark.parametrize(
    "messages,param,message",
    [
        ([tool_answer("call_1")], "messages[0].role", NO_OPEN_CALLS),
        ([USER_HI, {"role": "assistant", "content": "Hi"}, tool_answer("call_1")], "messages[2].role", NO_OPEN_CALLS),
        ([USER_HI, tool_round(("a", "b")), tool_answer("a"), USER_HI], "messages[3].role", unanswered("b")),
        ([USER_HI, tool_round(("a", "b")), USER_HI], "messages[2].role", unanswered("a", "b")),
        ([USER_HI, tool_round(("a", "b")), tool_answer("a"), tool_answer("a")], "messages[3].role", NO_OPEN_CALLS),
        ([USER_HI, tool_round(("a",)), tool_answer("a"), tool_answer("a")], "messages[3].role", NO_OPEN_CALLS),
        ([USER_HI, tool_round(("a",)), tool_answer("a"), tool_answer("b")], "messages[3].role", NO_OPEN_CALLS),
        (
            [USER_HI, tool_round(("a", "b")), tool_answer("zzz")],
            "messages[2].tool_call_id",
            "Invalid parameter: 'tool_call_id' of 'zzz' not found in 'tool_calls' of previous message.",
        ),
        (
            [USER_HI, tool_round(("a",)), tool_answer("a"), {"role": "assistant", "content": "ok"}, tool_answer("a")],
            "messages[4].role",
            NO_OPEN_CALLS,
        ),
        ([USER_HI, tool_round(("a", "b"))], "messages[1].role", unanswered("a", "b")),
        ([USER_HI, tool_round(("a", "b")), tool_answer("b")], "messages[1].role", unanswered("a")),
    ],
)
def test_tool_history_refusals(messages, param, message):
    assert_refused(messages_of(*messages), UNSUPPORTED, param, message)
