"""What /v1/responses takes of a stock client's first request: include, the named keys, namespace tools, hosted
tools and the lowered token limit (horde/oai/responses/request.py, tools.py, input_items.py)."""

from __future__ import annotations

import copy
import json

import pytest

from horde.http.contract import TOKEN_CEILING
from horde.oai.responses import request as mapping
from horde.oai.responses import tools
from horde.oai.screening import ScreeningError, screen_chat_request

EXEC = {
    "type": "function",
    "name": "exec_command",
    "description": "Runs a command.",
    "strict": False,
    "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}, "required": ["cmd"]},
}
CLOSE_AGENT = dict(EXEC, name="close_agent", description="Close an agent.")
SPAWN_AGENT = dict(EXEC, name="spawn_agent", description="Spawn an agent.", defer_loading=True)
NAMESPACE = {
    "type": "namespace",
    "name": "multi_agent_v1",
    "description": "Tools for spawning and managing sub-agents.",
    "tools": [CLOSE_AGENT, SPAWN_AGENT],
}
#: What Codex CLI 0.171 sends first, cut down (agent-clients.md and a capture through a logging proxy).
CODEX = {
    "model": "horde/coder",
    "instructions": "You are Codex.",
    "input": [
        {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "Sandbox: read-only."}]},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Say hello"}]},
    ],
    "tools": [EXEC, NAMESPACE, {"type": "web_search", "external_web_access": False}],
    "tool_choice": "auto",
    "parallel_tool_calls": True,
    "reasoning": {"summary": "auto"},
    "store": False,
    "stream": True,
    "include": ["reasoning.encrypted_content"],
    "prompt_cache_key": "01a2425e-d067-77e1-a188-fbe9a5edb2da",
    "client_metadata": {"session_id": "01a2425e", "x-codex-installation-id": "cf302bcd"},
}


def screen(body, opener=None, **keys):
    """The mapping, then the chat screening, as ResponsesCall.screen_for runs them (without a database)."""
    body = dict(copy.deepcopy(body), **keys)
    mapped = mapping.chat_body(body, [], opener)
    try:
        screened = screen_chat_request(mapped.chat)
    except ScreeningError as error:
        raise mapping.renamed(error, mapped.namespaces) from None
    mapped.ignored.take(screened.ignored, lambda param: mapping.rename(param, mapped.namespaces))
    return mapped, screened


def refused(body, **keys) -> ScreeningError:
    with pytest.raises(ScreeningError) as info:
        screen(body, **keys)
    return info.value


def test_codex_s_first_request_is_accepted_with_what_it_drops_named():
    mapped, screened = screen(CODEX)
    names = [tool["function"]["name"] for tool in screened.native["tools"]]
    assert names == ["exec_command", "multi_agent_v1__close_agent", "multi_agent_v1__spawn_agent"]
    assert screened.native["tool_choice"] == "auto" and screened.native["parallel_tool_calls"] is True
    assert mapped.sealed_reasoning is True
    assert mapped.ignored.paths == [
        "tools[1].tools[1].defer_loading",
        "tools[2]",
        "client_metadata",
    ]
    about = screened.native["tools"][1]["function"]["description"]
    assert about == "Tools for spawning and managing sub-agents.\n\nClose an agent."


def test_a_summary_other_than_auto_is_named():
    for summary, named in (("auto", False), ("concise", True), ("detailed", True)):
        mapped, _ = screen(CODEX, reasoning={"summary": summary, "effort": "low"})
        assert ("reasoning.summary" in mapped.ignored.paths) is named, summary


def test_include_serves_encrypted_reasoning_only():
    assert screen(CODEX, include=[])[0].sealed_reasoning is False
    error = refused(CODEX, include=["reasoning.encrypted_content", "message.output_text.logprobs"])
    assert (error.param, error.code) == ("include[1]", "UnsupportedChatParameter")


def test_max_output_tokens_above_the_ceiling_is_lowered():
    mapped, screened = screen(CODEX, max_output_tokens=128000)
    assert screened.native["max_tokens"] == TOKEN_CEILING
    assert mapped.ignored.lowered == [{"param": "max_output_tokens", "from": 128000, "to": TOKEN_CEILING}]
    assert refused(CODEX, max_output_tokens=8).param == "max_output_tokens"


def test_unknown_keys_and_client_run_tools_the_horde_does_not_serve_are_refused():
    assert refused(CODEX, prompt_cache_retention="24h").param == "prompt_cache_retention"
    assert refused(CODEX, client_metadata="x").param == "client_metadata"
    assert refused(CODEX, prompt_cache_key=7).param == "prompt_cache_key"
    for kind in ("custom", "apply_patch", "shell", "tool_search"):
        assert refused(CODEX, tools=[EXEC, {"type": kind, "name": "x"}]).param == "tools[1].type"
    assert refused(CODEX, tools=[EXEC, dict(NAMESPACE, tools=[{"type": "custom"}])]).param == "tools[1].tools[0].type"


def test_a_chat_refusal_names_the_tool_s_path_in_the_body():
    loose = {"type": "object", "properties": {"a": {"type": "string"}}}  # strict wants additionalProperties false
    bad = dict(SPAWN_AGENT, strict=True, parameters=loose)
    error = refused(CODEX, tools=[EXEC, dict(NAMESPACE, tools=[CLOSE_AGENT, bad])])
    assert error.param == "tools[1].tools[1].parameters", error
    error = refused(CODEX, tools=[EXEC, dict(EXEC, description="again")])
    assert error.param == "tools[1].name", error


@pytest.mark.parametrize("kind", tools.HOSTED_TOOL_TYPES)
def test_a_hosted_tool_is_dropped_unless_forced(kind):
    mapped, screened = screen(CODEX, tools=[{"type": kind}, EXEC])
    assert mapped.ignored.paths[0] == "tools[0]" and len(screened.native["tools"]) == 1
    assert refused(CODEX, tools=[{"type": kind}, EXEC], tool_choice={"type": kind}).param == "tool_choice"


def test_only_hosted_tools_leave_auto_nothing_to_choose_and_required_nothing_to_call():
    _, screened = screen(CODEX, tools=[{"type": "web_search"}])
    assert "tools" not in screened.native and "tool_choice" not in screened.native
    assert "parallel_tool_calls" not in screened.native
    assert refused(CODEX, tools=[{"type": "web_search"}], tool_choice="required").param == "tool_choice"


def test_flat_names_are_stable_reversible_and_at_most_64_characters():
    assert tools.flat_name("multi_agent_v1", "close_agent") == "multi_agent_v1__close_agent"
    assert tools.flat_name("mcp__server_", "_query") == "mcp__server__query"
    long = tools.flat_name("n" * 40, "f" * 40)
    assert len(long) == 64 and long == tools.flat_name("n" * 40, "f" * 40) != tools.flat_name("n" * 40, "f" * 41)
    mapped, _ = screen(CODEX)
    assert mapped.namespaces.split("multi_agent_v1__close_agent") == ("multi_agent_v1", "close_agent")
    assert mapped.namespaces.split("exec_command") == (None, "exec_command")


def test_a_namespaced_call_sent_back_calls_the_flat_function():
    call = {
        "type": "function_call",
        "name": "close_agent",
        "namespace": "multi_agent_v1",
        "arguments": json.dumps({"target": "a1"}),
        "call_id": "call_1",
    }
    output = {"type": "function_call_output", "call_id": "call_1", "output": "closed"}
    _, screened = screen(CODEX, input=[*CODEX["input"], call, output])
    assistant = screened.native["messages"][-2]
    assert assistant["tool_calls"][0]["function"]["name"] == "multi_agent_v1__close_agent"


def test_a_reasoning_item_s_encrypted_content_must_open():
    seen = []

    def opener(token, param):
        seen.append((token, param))
        if token != "good":
            raise ScreeningError(f"Invalid '{param}'.", param=param)

    reasoning = {"type": "reasoning", "summary": [], "content": None, "encrypted_content": "good"}
    screen(CODEX, opener, input=[*CODEX["input"], reasoning])
    assert seen == [("good", "input[2].encrypted_content")]
    with pytest.raises(ScreeningError) as info:
        screen(CODEX, opener, input=[*CODEX["input"], dict(reasoning, encrypted_content="forged")])
    assert info.value.param == "input[2].encrypted_content"
    screen(CODEX, opener, input=[*CODEX["input"], dict(reasoning, encrypted_content=None)])  # nothing to open
    assert len(seen) == 2


def test_an_item_reference_stands_for_the_stored_item_it_names():
    stored = {
        "rs_abc": {"type": "reasoning", "id": "rs_abc", "summary": []},
        "fc_abc_1": {
            "type": "function_call",
            "id": "fc_abc_1",
            "call_id": "call_9",
            "name": "close_agent",
            "namespace": "multi_agent_v1",
            "arguments": "{}",
        },
    }
    asked = []

    def resolve(item_id, param):
        asked.append((item_id, param))
        if item_id not in stored:
            raise ScreeningError(f"Item with id '{item_id}' not found.", param=param)
        return stored[item_id]

    references = [{"type": "item_reference", "id": "rs_abc"}, {"type": "item_reference", "id": "fc_abc_1"}]
    output = {"type": "function_call_output", "call_id": "call_9", "output": "closed"}
    body = dict(copy.deepcopy(CODEX), input=[*CODEX["input"], *references, output])
    mapped = mapping.chat_body(body, [], None, resolve)
    assert asked == [("rs_abc", "input[2].id"), ("fc_abc_1", "input[3].id")]
    assert mapped.turn[-2]["tool_calls"][0]["function"]["name"] == "multi_agent_v1__close_agent"
    with pytest.raises(ScreeningError) as missing:
        mapping.chat_body(dict(body, input=[{"type": "item_reference", "id": "rs_gone"}]), [], None, resolve)
    assert missing.value.param == "input[0].id"
