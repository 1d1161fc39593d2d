"""Every dialect names what it accepted without acting on it, and what it lowered, in its headers and x_horde,
JSON and streamed, replayed and stored; what it cannot serve is still refused, with nothing queued
(horde/oai/ignored.py and the dialects' screening), through the app with a worker in a thread."""

from __future__ import annotations

import copy
import json
import random
import threading
import time

import pytest

from horde.chat.models import ChatRequest
from horde.http.contract import TOKEN_CEILING
from horde.oai import ignored
from tests.support.native import ALL_FEATURES, pop, submit

WORKER_MAX_LENGTH = 8192
HELLO = [{"role": "user", "content": "Hello"}]
BASH = {
    "name": "Bash",
    "description": "Run a command",
    "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
}


class Worker:
    """A worker in a thread, through the app: pops one job per reply (within a deadline) and submits that reply."""

    DEADLINE_S = 30

    def __init__(self, client, key, *replies):
        self.client, self.key, self.replies = client.application.test_client(), key, replies
        self.jobs: list[dict] = []
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        deadline = time.monotonic() + self.DEADLINE_S
        for reply in self.replies:
            job = {"id": None}
            while not job["id"] and time.monotonic() < deadline:
                job = pop(self.client, self.key, **DECLARATION, wait=2)
            if not job["id"]:
                return
            self.jobs.append(job)
            assert submit(self.client, self.key, job["id"], **reply).status_code == 200

    def join(self):
        self.thread.join(self.DEADLINE_S)
        assert not self.thread.is_alive() and len(self.jobs) == len(self.replies)


DECLARATION = {
    "models": ("m1",),
    "max_length": WORKER_MAX_LENGTH,
    "max_context_length": 200_000,
    "threads": 1,
    "features": ALL_FEATURES,
}


@pytest.fixture
def owner_key(client, make_user):
    """The worker's owner; the worker is online (it popped once, nothing to take)."""
    key = make_user("owner")[1]
    pop(client, key, **DECLARATION)
    return key


@pytest.fixture
def key(make_user):
    return make_user("client", kudos=1_000_000)[1]


def requests_made(runtime) -> int:
    with runtime.db.transaction() as session:
        return session.query(ChatRequest).count()


def post(client, path, body, key, **headers):
    return client.post(path, json=body, headers={"Authorization": f"Bearer {key}", **headers})


def sse(response) -> list[dict]:
    """The JSON payloads of a stream's data lines."""
    return [
        json.loads(line[len("data: ") :])
        for line in response.get_data(as_text=True).splitlines()
        if line.startswith("data: ") and line != "data: [DONE]"
    ]


# --- /v1/chat/completions -------------------------------------------------------------------------------------


def test_chat_names_what_it_drops_in_the_header_and_x_horde_json_and_streamed(client, owner_key, key):
    body = {"model": "m1", "messages": HELLO, "user": "end-user-7", "prompt_cache_key": "s-1", "store": False}
    worker = Worker(client, owner_key, {"content": "Hi"}, {"content": "Hi"})
    answer = post(client, "/v1/chat/completions", body, key)
    streamed = post(client, "/v1/chat/completions", dict(body, stream=True), key)
    worker.join()
    assert answer.status_code == 200, answer.json
    assert answer.headers[ignored.IGNORED_HEADER] == "user"
    assert ignored.LOWERED_HEADER not in answer.headers
    assert answer.json["x_horde"]["ignored_parameters"] == ["user"]
    assert answer.json["x_horde"]["lowered_parameters"] == []
    assert streamed.headers[ignored.IGNORED_HEADER] == "user"
    final = [chunk for chunk in sse(streamed) if "x_horde" in chunk]
    assert len(final) == 1 and final[0]["x_horde"]["ignored_parameters"] == ["user"]


def test_chat_defaults_are_not_named(client, owner_key, key):
    body = {"model": "m1", "messages": HELLO, "store": False, "logprobs": False, "n": 1, "service_tier": "auto"}
    worker = Worker(client, owner_key, {"content": "Hi"})
    answer = post(client, "/v1/chat/completions", body, key)
    worker.join()
    assert answer.status_code == 200
    assert ignored.IGNORED_HEADER not in answer.headers and answer.json["x_horde"]["ignored_parameters"] == []


def test_chat_names_a_limit_admission_lowered_and_a_replay_answers_the_same(client, owner_key, key):
    body = {"model": "m1", "messages": HELLO, "max_tokens": TOKEN_CEILING, "user": "u"}
    worker = Worker(client, owner_key, {"content": "Hi"})
    first = post(client, "/v1/chat/completions", body, key, **{"Idempotency-Key": "k-1"})
    worker.join()
    replay = post(client, "/v1/chat/completions", body, key, **{"Idempotency-Key": "k-1"})
    assert first.status_code == replay.status_code == 200
    assert replay.headers["Idempotent-Replayed"] == "true"
    for answer in (first, replay):
        assert answer.headers[ignored.LOWERED_HEADER] == f"max_tokens={WORKER_MAX_LENGTH}"
        assert answer.headers[ignored.IGNORED_HEADER] == "user"
        assert answer.json["x_horde"]["lowered_parameters"] == [
            {"param": "max_tokens", "from": TOKEN_CEILING, "to": WORKER_MAX_LENGTH}
        ]


def test_chat_keeps_its_token_contract(client, owner_key, key, runtime):
    answer = post(client, "/v1/chat/completions", {"model": "m1", "messages": HELLO, "max_tokens": 32000}, key)
    assert answer.status_code == 400 and answer.json["error"]["param"] == "max_tokens"
    assert requests_made(runtime) == 0


# --- /v1/messages -------------------------------------------------------------------------------------------------


CLAUDE_CODE = {
    "model": "m1",
    "max_tokens": 32000,
    "system": [{"type": "text", "text": "You are a Claude agent.", "cache_control": {"type": "ephemeral"}}],
    "messages": [{"role": "user", "content": [{"type": "text", "text": "Hi", "cache_control": {"type": "ephemeral"}}]}],
    "tools": [BASH],
    "metadata": {"user_id": '{"device_id":"d","account_uuid":"","session_id":"s"}'},
    "thinking": {"type": "enabled", "budget_tokens": 31999},
    "context_management": {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]},
}
CLAUDE_CODE_NAMED = (
    "system[0].cache_control, messages[0].content[0].cache_control, context_management.edits[0], metadata.user_id"
)
CLAUDE_CODE_LOWERED = f"max_tokens={WORKER_MAX_LENGTH}, thinking.budget_tokens={TOKEN_CEILING - 1}"
ANTHROPIC = {"anthropic-version": "2023-06-01", "anthropic-beta": "claude-code-20250219,context-management-2025-06-27"}


def test_messages_takes_claude_code_s_request_and_names_what_it_drops(client, owner_key, key):
    reply = {"content": "Hello.", "reasoning_content": "A greeting."}
    worker = Worker(client, owner_key, reply, reply)
    answer = post(client, "/v1/messages?beta=true", CLAUDE_CODE, key, **ANTHROPIC)
    streamed = post(client, "/v1/messages?beta=true", dict(CLAUDE_CODE, stream=True), key, **ANTHROPIC)
    worker.join()
    assert answer.status_code == 200, answer.json
    assert [job["payload"]["max_tokens"] for job in worker.jobs] == [WORKER_MAX_LENGTH] * 2
    for response in (answer, streamed):
        assert response.headers[ignored.IGNORED_HEADER] == CLAUDE_CODE_NAMED
        assert response.headers[ignored.LOWERED_HEADER] == CLAUDE_CODE_LOWERED
    message = answer.json
    assert [block["type"] for block in message["content"]] == ["thinking", "text"]
    assert message["context_management"] == {"applied_edits": []}
    x_horde = message["x_horde"]
    assert x_horde["ignored_parameters"] == CLAUDE_CODE_NAMED.split(", ")
    assert x_horde["context_adjustments"][0] == {"from": 32000, "to": WORKER_MAX_LENGTH, "reason": "worker_max_length"}
    assert x_horde["lowered_parameters"] == [
        {"param": "max_tokens", "from": 32000, "to": WORKER_MAX_LENGTH},
        {"param": "thinking.budget_tokens", "from": 31999, "to": TOKEN_CEILING - 1},
    ]
    delta = [event for event in sse(streamed) if event["type"] == "message_delta"]
    assert len(delta) == 1 and delta[0]["x_horde"]["ignored_parameters"] == x_horde["ignored_parameters"]
    assert delta[0]["x_horde"]["lowered_parameters"] == x_horde["lowered_parameters"]


def test_messages_serves_claude_code_s_adaptive_effort_on_a_model_no_worker_reasons_with(
    client, make_user, owner_key, key
):
    """Claude Code 2.1.197 sends `thinking: adaptive` and `output_config.effort: high` for any model: a hint. Where no
    online worker of the model declares reasoning_effort, the effort is dropped and named, and the request served
    (it was routed as a requirement no worker met); where one does, the effort still reaches the worker."""
    owner = make_user("plain-owner")[1]
    plain = dict(
        DECLARATION,
        name="plain-worker",
        models=("plain",),
        features=[name for name in ALL_FEATURES if name != "reasoning_effort"],
    )
    pop(client, owner, **plain)
    body = {
        "model": "plain",
        "max_tokens": 32000,
        "messages": [{"role": "user", "content": "Hello"}],
        "thinking": {"type": "adaptive"},
        "output_config": {"effort": "high"},
    }
    served: list[dict] = []

    def work():
        deadline = time.monotonic() + Worker.DEADLINE_S
        worker_client = client.application.test_client()
        while not served and time.monotonic() < deadline:
            job = pop(worker_client, owner, **plain, wait=2)
            if job["id"]:
                served.append(job)
                submit(worker_client, owner, job["id"], content="Hello.")

    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    answer = post(client, "/v1/messages", body, key, **ANTHROPIC)
    thread.join(Worker.DEADLINE_S)
    assert answer.status_code == 200, answer.json
    assert "output_config.effort" in answer.json["x_horde"]["ignored_parameters"]
    assert "reasoning_effort" not in served[0]["payload"]

    reasoning_worker = Worker(client, owner_key, {"content": "Hi.", "reasoning_content": "Hm."})
    answer = post(client, "/v1/messages", dict(body, model="m1"), key, **ANTHROPIC)
    reasoning_worker.join()
    assert answer.status_code == 200, answer.json
    assert "output_config.effort" not in answer.json["x_horde"]["ignored_parameters"]
    assert reasoning_worker.jobs[0]["payload"]["reasoning_effort"] == "high"


def test_messages_clears_old_tool_results_before_the_worker_sees_them(client, owner_key, key):
    messages = [{"role": "user", "content": "Look around."}]
    for index in range(4):
        use = {"type": "tool_use", "id": f"call_{index}", "name": "Bash", "input": {"command": "ls"}}
        result = {"type": "tool_result", "tool_use_id": f"call_{index}", "content": f"listing {index} " + "x" * 400}
        messages += [{"role": "assistant", "content": [use]}, {"role": "user", "content": [result]}]
    edit = {
        "type": "clear_tool_uses_20250919",
        "trigger": {"type": "tool_uses", "value": 2},
        "keep": {"type": "tool_uses", "value": 1},
    }
    body = {
        "model": "m1",
        "max_tokens": 1024,
        "messages": messages,
        "tools": [BASH],
        "context_management": {"edits": [edit]},
    }
    worker = Worker(client, owner_key, {"content": "Done."})
    answer = post(client, "/v1/messages", body, key)
    worker.join()
    assert answer.status_code == 200, answer.json
    seen = [m["content"] for m in worker.jobs[0]["payload"]["messages"] if m["role"] == "tool"]
    assert seen[:3] == ["[This tool result was cleared to save context.]"] * 3 and seen[3].startswith("listing 3")
    applied = answer.json["context_management"]["applied_edits"]
    assert applied[0]["type"] == "clear_tool_uses_20250919" and applied[0]["cleared_tool_uses"] == 3
    assert ignored.IGNORED_HEADER not in answer.headers


def test_messages_still_refuses_what_it_cannot_serve(client, owner_key, key, runtime):
    for extra, param in (
        ({"top_k": 5}, "top_k"),
        ({"context_management": {"edits": [{"type": "compact_20260112"}]}}, "context_management.edits[0].type"),
        ({"max_tokens": 4}, "max_tokens"),
    ):
        answer = post(client, "/v1/messages", dict(CLAUDE_CODE, **extra), key)
        assert answer.status_code == 400 and f"param: {param}" in answer.json["error"]["message"], answer.json
    assert requests_made(runtime) == 0


# --- /v1/responses ------------------------------------------------------------------------------------------------


EXEC = {
    "type": "function",
    "name": "exec_command",
    "description": "Runs a command.",
    "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}, "required": ["cmd"]},
}
NAMESPACE = {
    "type": "namespace",
    "name": "multi_agent_v1",
    "description": "Sub-agents.",
    "tools": [dict(EXEC, name="close_agent", description="Close an agent.")],
}
CODEX = {
    "model": "m1",
    "instructions": "You are Codex.",
    "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Close the agent"}]}],
    "tools": [EXEC, NAMESPACE, {"type": "web_search"}],
    "tool_choice": "auto",
    "parallel_tool_calls": True,
    "reasoning": {"summary": "auto"},
    "store": False,
    "include": ["reasoning.encrypted_content"],
    "prompt_cache_key": "session-1",
    "client_metadata": {"session_id": "session-1"},
}
CODEX_NAMED = "tools[2], client_metadata"
CLOSE_CALL = {
    "content": None,
    "reasoning_content": "Close it.",
    "tool_calls": [
        {
            "id": "call_1",
            "type": "function",
            "function": {"name": "multi_agent_v1__close_agent", "arguments": '{"cmd": "a1"}'},
        }
    ],
}


def test_responses_serves_codex_s_request_namespaces_flattened_and_mapped_back(client, owner_key, key):
    worker = Worker(client, owner_key, CLOSE_CALL, CLOSE_CALL)
    answer = post(client, "/v1/responses", CODEX, key)
    streamed = post(client, "/v1/responses", dict(CODEX, stream=True), key)
    worker.join()
    assert answer.status_code == 200, answer.json
    offered = [tool["function"]["name"] for tool in worker.jobs[0]["payload"]["tools"]]
    assert offered == ["exec_command", "multi_agent_v1__close_agent"]
    for response in (answer, streamed):
        assert response.headers[ignored.IGNORED_HEADER] == CODEX_NAMED
    call = [item for item in answer.json["output"] if item["type"] == "function_call"]
    assert [(item["namespace"], item["name"]) for item in call] == [("multi_agent_v1", "close_agent")]
    assert [tool["type"] for tool in answer.json["tools"]] == ["function", "namespace"]  # the hosted tool was dropped
    assert answer.json["x_horde"]["ignored_parameters"] == CODEX_NAMED.split(", ")
    events = sse(streamed)
    done = [event["item"] for event in events if event["type"] == "response.output_item.done"]
    assert [(item["type"], item.get("namespace"), item.get("name")) for item in done] == [
        ("reasoning", None, None),
        ("function_call", "multi_agent_v1", "close_agent"),
    ]
    assert done[0]["encrypted_content"]
    assert events[-1]["response"]["x_horde"]["ignored_parameters"] == CODEX_NAMED.split(", ")


def test_responses_reads_back_the_reasoning_it_sealed_for_the_same_user(client, owner_key, key, make_user, runtime):
    worker = Worker(client, owner_key, CLOSE_CALL, {"content": "Closed."})
    first = post(client, "/v1/responses", CODEX, key)
    assert first.status_code == 200, first.json
    reasoning, call = first.json["output"]
    assert reasoning["type"] == "reasoning" and reasoning["encrypted_content"]
    assert "Close it." not in reasoning["encrypted_content"]
    output = {"type": "function_call_output", "call_id": call["call_id"], "output": "closed"}
    turn = [*CODEX["input"], reasoning, call, output]
    second = post(client, "/v1/responses", dict(CODEX, input=turn), key)
    worker.join()
    assert second.status_code == 200, second.json
    assert second.json["output"][-1]["content"][0]["text"] == "Closed."
    sent_back = worker.jobs[1]["payload"]["messages"]
    assert [m["role"] for m in sent_back][-2:] == ["assistant", "tool"]
    assert sent_back[-2]["tool_calls"][0]["function"]["name"] == "multi_agent_v1__close_agent"

    made = requests_made(runtime)
    token = reasoning["encrypted_content"]
    flipped = token[:10] + ("A" if token[10] != "A" else "B") + token[11:]
    other_key = make_user("someone-else", kudos=1000)[1]
    for sender, sealed in ((key, flipped), (key, "not-a-token"), (other_key, token)):
        refused = post(
            client, "/v1/responses", dict(CODEX, input=[*turn[:1], dict(reasoning, encrypted_content=sealed)]), sender
        )
        error = refused.json["error"]
        assert refused.status_code == 400 and error["param"] == "input[1].encrypted_content", refused.json
        assert error["code"] == "BadRequest"
    assert requests_made(runtime) == made


def test_a_stored_response_answers_the_same_header(client, owner_key, key):
    worker = Worker(client, owner_key, {"content": "Hi"})
    body = dict(CODEX, store=True, max_output_tokens=64000)
    answer = post(client, "/v1/responses", body, key)
    worker.join()
    assert answer.status_code == 200, answer.json
    assert answer.headers[ignored.LOWERED_HEADER] == f"max_output_tokens={WORKER_MAX_LENGTH}"
    stored = client.get(f"/v1/responses/{answer.json['id']}", headers={"Authorization": f"Bearer {key}"})
    assert stored.status_code == 200 and stored.json == answer.json
    for name in (ignored.IGNORED_HEADER, ignored.LOWERED_HEADER):
        assert stored.headers[name] == answer.headers[name]


def test_responses_still_refuses_what_it_cannot_serve(client, owner_key, key, runtime):
    for extra, param in (
        ({"frobnicate": 1}, "frobnicate"),
        ({"tool_choice": {"type": "web_search"}}, "tool_choice"),
        ({"include": ["file_search_call.results"]}, "include[0]"),
        ({"tools": [{"type": "custom", "name": "apply_patch"}]}, "tools[0].type"),
        ({"background": True}, "background"),
    ):
        answer = post(client, "/v1/responses", dict(CODEX, **extra), key)
        assert answer.status_code == 400 and answer.json["error"]["param"] == param, answer.json
    assert requests_made(runtime) == 0


def test_the_ai_sdk_s_item_reference_to_a_stored_reasoning_item_is_served(client, owner_key, key, make_user):
    """@ai-sdk/openai (Responses) sends a stored response's reasoning back as an item_reference."""
    worker = Worker(client, owner_key, CLOSE_CALL, {"content": "Closed."})
    body = {"model": "m1", "input": "Close it", "tools": [NAMESPACE]}
    first = post(client, "/v1/responses", body, key)
    assert first.status_code == 200, first.json
    reasoning, call = first.json["output"]
    output = {"type": "function_call_output", "call_id": call["call_id"], "output": "closed"}
    turn = [{"role": "user", "content": "Close it"}, {"type": "item_reference", "id": reasoning["id"]}, call, output]
    second = post(client, "/v1/responses", dict(body, input=turn), key)
    worker.join()
    assert second.status_code == 200, second.json
    by_reference = dict(body, input=[turn[0], {"type": "item_reference", "id": call["id"]}, output])
    someone_else = make_user("someone-else", kudos=1000)[1]
    refused = post(client, "/v1/responses", by_reference, someone_else)
    assert refused.status_code == 404 and refused.json["error"]["param"] == "input[1].id", refused.json


# --- No input makes a 500 ----------------------------------------------------------------------------------------


FUZZ_ROUNDS = 150
FUZZ_VALUES = [None, True, 0, -1, 2**70, 1e308, "", "x", "all", [], {}, [{}], ["x"], {"type": "all"}, "a" * 300]


def _mutated(rng, base: dict, paths: list[tuple]) -> dict:
    """`base` with one to three of its nested `paths` set to a random fuzz value."""
    body = json.loads(json.dumps(base))
    for _ in range(rng.randint(1, 3)):
        *parents, leaf = rng.choice(paths)
        target = body
        for part in parents:
            target = target[part] if isinstance(target, dict | list) and _has(target, part) else None
            if target is None:
                break
        if isinstance(target, dict) or (isinstance(target, list) and isinstance(leaf, int) and leaf < len(target)):
            target[leaf] = copy.deepcopy(rng.choice(FUZZ_VALUES))
    return body


def _has(container, part) -> bool:
    return part in container if isinstance(container, dict) else isinstance(part, int) and part < len(container)


def test_no_input_to_the_new_keys_makes_a_500(client, key):
    """No worker is online: a body that passes screening ends in a gap refusal, never a 500."""
    rng = random.Random(39)
    messages_paths = [
        ("max_tokens",),
        ("thinking",),
        ("thinking", "budget_tokens"),
        ("thinking", "display"),
        ("output_config",),
        ("output_config", "effort"),
        ("output_config", "format"),
        ("context_management",),
        ("context_management", "edits"),
        ("context_management", "edits", 0),
        ("context_management", "edits", 0, "keep"),
        ("metadata",),
        ("system", 0, "cache_control"),
        ("messages", 0, "role"),
        ("messages", 0, "content", 0, "cache_control"),
        ("tools", 0, "cache_control"),
    ]
    clearing = {"type": "clear_tool_uses_20250919", "trigger": {"type": "tool_uses", "value": 1}, "exclude_tools": []}
    messages_base = dict(CLAUDE_CODE, context_management={"edits": [clearing]}, output_config={"effort": "max"})
    responses_paths = [
        ("include",),
        ("include", 0),
        ("prompt_cache_key",),
        ("client_metadata",),
        ("max_output_tokens",),
        ("reasoning", "summary"),
        ("tools", 1, "tools"),
        ("tools", 1, "name"),
        ("tools", 1, "tools", 0, "name"),
        ("tools", 2, "type"),
        ("tool_choice",),
        ("input", 1, "encrypted_content"),
        ("input", 2, "id"),
        ("input", 3, "namespace"),
    ]
    responses_input = [
        *CODEX["input"],
        {"type": "reasoning", "summary": [], "encrypted_content": "x"},
        {"type": "item_reference", "id": "rs_0"},
        {
            "type": "function_call",
            "call_id": "c",
            "name": "close_agent",
            "namespace": "multi_agent_v1",
            "arguments": "{}",
        },
    ]
    responses_base = dict(CODEX, input=responses_input)
    for _ in range(FUZZ_ROUNDS):
        for path, base, paths in (
            ("/v1/messages", messages_base, messages_paths),
            ("/v1/responses", responses_base, responses_paths),
        ):
            body = _mutated(rng, base, paths)
            response = post(client, path, body, key)
            assert response.status_code < 500 or response.status_code == 529, (path, body, response.json)
