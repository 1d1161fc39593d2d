"""The conversation key (horde/chat/conversation.py): a keyless client's conversation is known by its leading
messages, and every key is scoped to its user."""

from __future__ import annotations

from horde.chat import conversation

SYSTEM = {"role": "system", "content": "Be brief."}
FIRST = {"role": "user", "content": "What is a Horde?"}
TOOLS = [{"type": "function", "function": {"name": "look", "parameters": {"type": "object"}}}]


def _key(user_id: int, messages: list[dict], tools=None, **native) -> str:
    return conversation.of_request(user_id, {"messages": messages, "tools": tools, **native})


def test_the_same_leading_messages_give_one_key_for_one_user_whatever_follows():
    first_turn = _key(1, [SYSTEM, FIRST], TOOLS)
    later_turn = _key(
        1, [SYSTEM, FIRST, {"role": "assistant", "content": "A crowd."}, {"role": "user", "content": "And?"}], TOOLS
    )
    assert first_turn == later_turn
    assert len(first_turn) == conversation.STORED_KEY_CHARS


def test_another_user_gets_another_key():
    assert _key(1, [SYSTEM, FIRST]) != _key(2, [SYSTEM, FIRST])
    assert _key(1, [SYSTEM, FIRST], conversation_key="k") != _key(2, [SYSTEM, FIRST], conversation_key="k")


def test_another_system_prompt_first_message_or_tools_is_another_conversation():
    base = _key(1, [SYSTEM, FIRST], TOOLS)
    assert base != _key(1, [{"role": "system", "content": "Be long."}, FIRST], TOOLS)
    assert base != _key(1, [SYSTEM, {"role": "user", "content": "Hi"}], TOOLS)
    assert base != _key(1, [SYSTEM, FIRST], None)


def test_a_named_key_wins_over_the_inherited_and_the_messages():
    named = _key(1, [SYSTEM, FIRST], conversation_key="session-1")
    assert named == conversation.scoped(1, "session-1")
    assert named == _key(1, [{"role": "user", "content": "other"}], conversation_key="session-1")
    inherited = conversation.of_request(1, {"messages": [FIRST]}, inherited="0" * 32)
    assert inherited == "0" * 32
    assert conversation.of_request(1, {"messages": [FIRST], "conversation_key": "x"}, inherited="0" * 32) != inherited
