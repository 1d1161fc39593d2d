"""What /v1/messages takes of a stock client's first request: the lowered token limit and thinking budget, the
named keys, context_management edits, adaptive thinking and output_config (horde/oai/messages/)."""

from __future__ import annotations

import copy
import types

import pytest

from horde.chat.tokens import text_tokens
from horde.config import Settings
from horde.http.contract import TOKEN_CEILING
from horde.oai.messages import call, context_edits
from horde.oai.screening import ScreeningError

RUNTIME = types.SimpleNamespace(settings=Settings())
BASH = {
    "name": "Bash",
    "description": "Run a command",
    "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
}
READ = dict(BASH, name="Read", description="Read a file")
#: What Claude Code 2.1.197 sends first, cut down (agent-clients.md and a capture through a logging proxy).
CLAUDE_CODE = {
    "model": "horde/coder",
    "max_tokens": 32000,
    "system": [
        {"type": "text", "text": "x-anthropic-billing-header: cc_version=2.1.197"},
        {"type": "text", "text": "You are a Claude agent.", "cache_control": {"type": "ephemeral"}},
    ],
    "messages": [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "<system-reminder>date</system-reminder>"},
                {"type": "text", "text": "Say hello", "cache_control": {"type": "ephemeral"}},
            ],
        },
        {"role": "system", "content": "Available agent types: claude."},
    ],
    "tools": [BASH, dict(READ, cache_control={"type": "ephemeral"})],
    "metadata": {"user_id": '{"device_id":"d","account_uuid":"","session_id":"s"}'},
    "thinking": {"type": "adaptive"},
    "output_config": {"effort": "high"},
    "context_management": {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]},
    "stream": True,
}


def screen(body, **keys):
    body = dict(copy.deepcopy(body), **keys)
    return call.screen(RUNTIME, body)


def refused(body, **keys) -> ScreeningError:
    with pytest.raises(ScreeningError) as info:
        screen(body, **keys)
    return info.value


def test_claude_code_s_first_request_is_accepted_with_what_it_drops_named():
    screened, shape = screen(CLAUDE_CODE)
    assert screened.native["max_tokens"] == TOKEN_CEILING
    assert screened.native["reasoning_effort"] == "high"
    assert [message["role"] for message in screened.native["messages"]] == ["system", "user", "system"]
    assert screened.native["messages"][2]["content"] == "Available agent types: claude."
    assert screened.ignored.paths == [
        "system[1].cache_control",
        "messages[0].content[1].cache_control",
        "tools[1].cache_control",
        "context_management.edits[0]",
        "metadata.user_id",
    ]
    assert screened.ignored.lowered == [{"param": "max_tokens", "from": 32000, "to": TOKEN_CEILING}]
    assert shape.thinking is True and shape.applied_edits == []


def test_a_thinking_budget_above_the_lowered_limit_is_lowered_with_it():
    screened, _ = screen(CLAUDE_CODE, thinking={"type": "enabled", "budget_tokens": 31999}, output_config=None)
    assert screened.ignored.lowered == [
        {"param": "max_tokens", "from": 32000, "to": TOKEN_CEILING},
        {"param": "thinking.budget_tokens", "from": 31999, "to": TOKEN_CEILING - 1},
    ]
    assert screened.native["reasoning_effort"] == "high"  # from the budget the client sent
    screened, _ = screen(CLAUDE_CODE, max_tokens=8000, thinking={"type": "enabled", "budget_tokens": 2048})
    assert screened.ignored.lowered == [] and screened.native["max_tokens"] == 8000


@pytest.mark.parametrize("max_tokens,param", [(8, "max_tokens"), (0, "max_tokens"), ("32000", "max_tokens")])
def test_a_token_limit_below_the_floor_or_not_an_integer_is_still_refused(max_tokens, param):
    assert refused(CLAUDE_CODE, max_tokens=max_tokens).param == param


def test_thinking_display_omitted_returns_no_thinking_blocks():
    _, shown = screen(CLAUDE_CODE, thinking={"type": "adaptive", "display": "summarized"})
    _, omitted = screen(CLAUDE_CODE, thinking={"type": "adaptive", "display": "omitted"})
    assert shown.thinking is True and omitted.thinking is False
    assert refused(CLAUDE_CODE, thinking={"type": "adaptive", "budget_tokens": 2048}).param == "thinking.budget_tokens"
    assert refused(CLAUDE_CODE, thinking={"type": "sometimes"}).param == "thinking.type"


def test_output_config_sets_the_effort_and_the_format():
    schema = {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}
    screened, _ = screen(
        CLAUDE_CODE, thinking=None, output_config={"effort": "max", "format": {"type": "json_schema", "schema": schema}}
    )
    assert screened.native["reasoning_effort"] == "xhigh"
    assert screened.native["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "output", "schema": schema},
    }
    assert refused(CLAUDE_CODE, output_config={"effort": "huge"}).param == "output_config.effort"
    assert refused(CLAUDE_CODE, output_config={"verbosity": "low"}).param == "output_config.verbosity"
    assert (
        refused(CLAUDE_CODE, output_config={"format": {"type": "json_schema"}}).param == "output_config.format.schema"
    )


def test_unknown_keys_are_still_refused():
    for key, value in (("top_k", 5), ("container", "c"), ("mcp_servers", [])):
        error = refused(CLAUDE_CODE, **{key: value})
        assert (error.param, error.code) == (key, "UnsupportedChatParameter")
    assert refused(CLAUDE_CODE, metadata={"user_id": "u", "org": "o"}).param == "metadata.org"
    assert (
        refused(CLAUDE_CODE, tools=[dict(BASH, eager_input_streaming=True)]).param == "tools[0].eager_input_streaming"
    )


# --- context_management ---------------------------------------------------------------------------------------


def conversation(uses: int, result_chars: int = 4000, thinking: bool = False) -> list[dict]:
    """A user turn, then `uses` rounds of a Bash call and its result, then a user question."""
    messages: list[dict] = [{"role": "user", "content": "Look around."}]
    for index in range(uses):
        blocks: list[dict] = []
        if thinking:
            blocks.append({"type": "thinking", "thinking": f"Turn {index}: " + "t" * 400, "signature": "s"})
        blocks.append({"type": "tool_use", "id": f"call_{index}", "name": "Bash", "input": {"command": f"ls {index}"}})
        messages.append({"role": "assistant", "content": blocks})
        result = {"type": "tool_result", "tool_use_id": f"call_{index}", "content": f"{index}:" + "r" * result_chars}
        messages.append({"role": "user", "content": [result]})
    messages.append({"role": "user", "content": "And now?"})
    return messages


def edits(*edit):
    return {"edits": list(edit)}


def tool_results(native):
    return [message["content"] for message in native["messages"] if message["role"] == "tool"]


def test_clear_tool_uses_keeps_everything_below_its_trigger():
    body = dict(CLAUDE_CODE, messages=conversation(5), tools=[BASH])
    screened, shape = screen(body, context_management=edits({"type": "clear_tool_uses_20250919"}))
    assert shape.applied_edits == [] and all(
        text.startswith(f"{i}:") for i, text in enumerate(tool_results(screened.native))
    )


def test_clear_tool_uses_clears_older_results_past_its_trigger():
    body = dict(CLAUDE_CODE, messages=conversation(6), tools=[BASH])
    edit = {"type": "clear_tool_uses_20250919", "trigger": {"type": "input_tokens", "value": 2000}}
    screened, shape = screen(body, context_management=edits(edit))
    results = tool_results(screened.native)
    assert results[:3] == [context_edits.CLEARED_RESULT] * 3  # every use but the 3 kept by default
    assert [text[:2] for text in results[3:]] == ["3:", "4:", "5:"]
    assert shape.applied_edits == [
        {
            "type": "clear_tool_uses_20250919",
            "cleared_tool_uses": 3,
            "cleared_input_tokens": 3 * (text_tokens("0:" + "r" * 4000) - text_tokens(context_edits.CLEARED_RESULT)),
        }
    ]
    assert "context_management.edits[0]" not in screened.ignored.paths  # carried out, not named


def test_clear_tool_uses_honours_keep_exclude_and_clear_tool_inputs():
    messages = conversation(4)
    messages[3]["content"][0]["name"] = "Read"  # the second use is Read's
    body = dict(CLAUDE_CODE, messages=messages, tools=[BASH, READ])
    edit = {
        "type": "clear_tool_uses_20250919",
        "trigger": {"type": "tool_uses", "value": 4},
        "keep": {"type": "tool_uses", "value": 1},
        "exclude_tools": ["Read"],
        "clear_tool_inputs": True,
    }
    screened, shape = screen(body, context_management=edits(edit))
    results = tool_results(screened.native)
    assert results[0] == results[2] == context_edits.CLEARED_RESULT
    assert results[1].startswith("1:") and results[3].startswith("3:")
    calls = [m["tool_calls"][0]["function"] for m in screened.native["messages"] if m.get("tool_calls")]
    assert [call["arguments"] for call in calls] == ["{}", '{"command": "ls 1"}', "{}", '{"command": "ls 3"}']
    assert shape.applied_edits[0]["cleared_tool_uses"] == 2


def test_clear_tool_uses_clears_nothing_short_of_clear_at_least():
    body = dict(CLAUDE_CODE, messages=conversation(5, result_chars=40), tools=[BASH])
    edit = {
        "type": "clear_tool_uses_20250919",
        "trigger": {"type": "tool_uses", "value": 1},
        "clear_at_least": {"type": "input_tokens", "value": 5000},
    }
    screened, shape = screen(body, context_management=edits(edit))
    assert shape.applied_edits == [] and all(not text.startswith("[") for text in tool_results(screened.native))


def test_clear_thinking_with_kept_turns_is_carried_out_and_reported():
    body = dict(CLAUDE_CODE, messages=conversation(3, thinking=True), tools=[BASH])
    edit = {"type": "clear_thinking_20251015", "keep": {"type": "thinking_turns", "value": 1}}
    screened, shape = screen(body, context_management=edits(edit))
    assert shape.applied_edits == [
        {
            "type": "clear_thinking_20251015",
            "cleared_thinking_turns": 2,
            "cleared_input_tokens": 2 * text_tokens("Turn 0: " + "t" * 400),
        }
    ]
    assert "context_management.edits[0]" not in screened.ignored.paths
    assert not any("thinking" in str(message) for message in screened.native["messages"][1:])


@pytest.mark.parametrize(
    "edit,param",
    [
        ({"type": "compact_20260112"}, "context_management.edits[1].type"),
        (
            {"type": "clear_tool_uses_20250919", "keep": {"type": "tool_uses", "value": -1}},
            "context_management.edits[1].keep.value",
        ),
        (
            {"type": "clear_tool_uses_20250919", "trigger": {"type": "turns", "value": 3}},
            "context_management.edits[1].trigger.type",
        ),
        (
            {"type": "clear_tool_uses_20250919", "clear_tool_inputs": "yes"},
            "context_management.edits[1].clear_tool_inputs",
        ),
        ({"type": "clear_tool_uses_20250919", "placeholder": "x"}, "context_management.edits[1].placeholder"),
        ({"type": "clear_thinking_20251015"}, "context_management.edits[1].type"),
    ],
)
def test_an_edit_the_horde_cannot_carry_out_is_refused_naming_it(edit, param):
    first = {"type": "clear_thinking_20251015", "keep": "all"}
    error = refused(CLAUDE_CODE, context_management=edits(first, edit))
    assert error.param == param and error.status == 400, error


def test_count_tokens_takes_the_same_edits():
    body = {key: CLAUDE_CODE[key] for key in ("model", "system", "tools", "context_management", "thinking")}
    counted = call.count_tokens(RUNTIME, dict(body, messages=conversation(2)))
    assert counted["input_tokens"] > 0
