"""A real model behind the reference worker: OpenAI SDK → /v1 → Horde → worker → llama-server → back.

Opt-in on a user's machine (HORDE_TEST_LLAMA=1); always on in .ci/run.
"""

import json
import os

import jsonschema
import openai
import pytest

from tests.support.harness import unique_model

pytestmark = pytest.mark.skipif(
    os.environ.get("HORDE_TEST_LLAMA") != "1", reason="set HORDE_TEST_LLAMA=1 to run against a real llama-server"
)

SCHEMA = {
    "type": "object",
    "properties": {"a": {"type": "integer"}, "b": {"type": "boolean"}},
    "required": ["a", "b"],
    "additionalProperties": False,
}
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "lookup",
            "parameters": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
        },
    },
    {"type": "function", "function": {"name": "other", "parameters": {"type": "object", "properties": {}}}},
]


@pytest.fixture
def served(horde, llama):
    model = unique_model("llama")
    horde.worker(
        [model], "--backend", "openai", "--backend-url", llama.url, "--max-length", "256", "--progress-interval", "0.05"
    )
    return model


def test_plain_completion(horde, served):
    completion = horde.openai().chat.completions.create(
        model=served, messages=[{"role": "user", "content": "Hello"}], max_tokens=32, temperature=0.7, seed=3
    )
    assert isinstance(completion.choices[0].message.content, str)
    assert completion.choices[0].finish_reason in ("stop", "length")
    assert completion.model_extra["x_horde"]["model"] == served


def test_card_declares_what_llama_server_really_does(horde, served):
    card = horde.openai().models.retrieve(served).model_dump()
    features = set(card["x_horde"]["features"])
    assert {"progress", "json_schema", "seed"} <= features
    assert "tool_choice" not in card["x_horde"]["guarantees"]


def test_stream_relays_the_reply(horde, served):
    chunks = list(
        horde.openai().chat.completions.create(
            model=served,
            messages=[{"role": "user", "content": "Tell me a story"}],
            max_tokens=256,
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    finish = [c for c in chunks if c.choices and c.choices[0].finish_reason]
    assert finish and chunks[-1].usage.completion_tokens > 0
    assert text == horde_reply_content(horde, finish[0].model_extra["x_horde"]["request_id"])


def test_json_schema_output_validates(horde, served):
    completion = horde.openai().chat.completions.create(
        model=served,
        messages=[{"role": "user", "content": "Give me a and b"}],
        max_tokens=64,
        response_format={"type": "json_schema", "json_schema": {"name": "ab", "schema": SCHEMA, "strict": True}},
    )
    if completion.choices[0].finish_reason == "stop":
        jsonschema.validate(json.loads(completion.choices[0].message.content), SCHEMA)


def test_required_tool_choice_round(horde, served):
    client = horde.openai()
    messages = [{"role": "user", "content": "Look something up"}]
    first = client.chat.completions.create(
        model=served,
        messages=messages,
        tools=TOOLS,
        tool_choice="required",
        max_tokens=64,
        extra_body={"horde": {"conformance": "best_effort"}},
    )
    calls = first.choices[0].message.tool_calls
    assert calls and calls[0].function.name in ("lookup", "other")
    messages.append(first.choices[0].message)
    messages += [{"role": "tool", "tool_call_id": call.id, "content": "found it"} for call in calls]
    second = client.chat.completions.create(
        model=served, messages=messages, tools=TOOLS, max_tokens=32, tool_choice="none"
    )
    assert second.choices[0].message.tool_calls is None


def test_forced_function_under_strict_is_refused(horde, served):
    with pytest.raises(openai.NotFoundError) as raised:
        horde.openai().chat.completions.create(
            model=served,
            messages=[{"role": "user", "content": "x"}],
            tools=TOOLS,
            max_tokens=32,
            tool_choice={"type": "function", "function": {"name": "other"}},
        )
    assert raised.value.body["code"] == "no_worker_supports_features"
    assert "tool_choice" in raised.value.body["message"]


def horde_reply_content(horde, request_id):
    from horde.chat.models import ChatRequest

    with horde.runtime.db.transaction() as session:
        return (session.get(ChatRequest, request_id).reply or {}).get("content") or ""
