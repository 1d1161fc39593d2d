"""Context fitting: reject, grow, truncate_oldest."""

import contextlib

import pytest

from horde import errors
from horde.chat import context
from horde.chat.tokens import prompt_tokens, tools_tokens


def turns(count, words=50):
    messages = [{"role": "system", "content": "You are terse."}]
    for index in range(count):
        messages += [
            {"role": "user", "content": f"q{index} " + "word " * words},
            {"role": "assistant", "content": "answer " * words},
        ]
    return messages + [{"role": "user", "content": "latest question"}]


def test_fitting_messages_are_untouched():
    fitted = context.fit(turns(1), None, max_tokens=100, mode="reject", default_context=4096, largest_context=8192)
    assert fitted.adjustments == [] and fitted.context_tokens == 4096


def test_reject_refuses_what_does_not_fit_the_default_context():
    with pytest.raises(errors.NoWorkerSupportsLimit) as raised:
        context.fit(turns(30), None, max_tokens=100, mode="reject", default_context=2048, largest_context=8192)
    assert raised.value.param == "messages"


def test_grow_raises_the_context_up_to_the_largest():
    messages = turns(10)
    needed = prompt_tokens(messages) + 100
    fitted = context.fit(messages, None, max_tokens=100, mode="grow", default_context=1024, largest_context=8192)
    assert fitted.adjustments == [{"from": 1024, "to": needed, "reason": "grow"}]
    with pytest.raises(errors.NoWorkerSupportsLimit):
        context.fit(turns(100), None, max_tokens=100, mode="grow", default_context=1024, largest_context=2048)


def test_truncate_oldest_drops_whole_turns_and_keeps_system_and_latest():
    messages = turns(100)
    fitted = context.fit(
        messages, None, max_tokens=100, mode="truncate_oldest", default_context=1024, largest_context=2048
    )
    reasons = [adjustment["reason"] for adjustment in fitted.adjustments]
    assert reasons == ["grow", "truncate_oldest"]
    kept = fitted.messages
    assert kept[0] == messages[0] and kept[-1] == messages[-1]
    assert fitted.adjustments[1]["dropped_messages"] == len(messages) - len(kept)
    assert (len(messages) - len(kept)) % 2 == 0  # whole turns: a question with its answer
    assert fitted.prompt_tokens + 100 <= fitted.context_tokens
    assert kept[1]["role"] == "user"


def test_truncation_that_cannot_fit_the_latest_turn_is_refused():
    messages = [{"role": "user", "content": "word " * 5000}]
    with pytest.raises(errors.NoWorkerSupportsLimit):
        context.fit(messages, None, max_tokens=100, mode="truncate_oldest", default_context=1024, largest_context=2048)


@pytest.mark.parametrize("mode", ["truncate_oldest", "grow", "reject"])
def test_fitting_estimates_each_message_once(monkeypatch, mode):
    """Linear work: a quadratic fit (re-estimating the kept messages per dropped turn) counts millions here."""
    from horde.chat import tokens

    calls = []
    estimate = tokens.message_tokens
    monkeypatch.setattr(tokens, "message_tokens", lambda message: calls.append(1) or estimate(message))
    messages = turns(5000, words=2)
    fitted = None
    with contextlib.suppress(errors.NoWorkerSupportsLimit):
        fitted = context.fit(messages, None, max_tokens=100, mode=mode, default_context=1024, largest_context=2048)
    assert len(calls) == len(messages)
    assert (fitted is not None) == (mode == "truncate_oldest")
    if fitted is not None:
        monkeypatch.undo()
        assert fitted.prompt_tokens == prompt_tokens(fitted.messages) <= 2048 - 100
        assert fitted.adjustments[-1]["dropped_messages"] == len(messages) - len(fitted.messages)


def test_a_refusal_names_what_the_tools_take():
    """A chat UI that sends tools of its own with a short message: the refusal says where the tokens went."""
    tools = [
        {"type": "function", "function": {"name": f"tool_{i}", "description": "word " * 100, "parameters": {}}}
        for i in range(60)
    ]
    messages = [{"role": "user", "content": "Hello"}]
    with pytest.raises(errors.NoWorkerSupportsLimit) as raised:
        context.fit(messages, tools, max_tokens=512, mode="truncate_oldest", default_context=2048, largest_context=4096)
    tools_cost = tools_tokens(tools)
    assert raised.value.metadata["tools_tokens"] == tools_cost > 4096
    assert raised.value.metadata["prompt_tokens"] == prompt_tokens(messages, tools)
    assert f"({tools_cost} of them the tools' definitions, which no dropped turn shortens)" in str(raised.value)


def test_a_refusal_without_tools_names_none():
    with pytest.raises(errors.NoWorkerSupportsLimit) as raised:
        context.fit(turns(30), None, max_tokens=100, mode="reject", default_context=2048, largest_context=8192)
    assert raised.value.metadata["tools_tokens"] == 0 and "tools" not in str(raised.value)
