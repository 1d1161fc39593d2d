"""Anthropic's Messages API against a real server and a scripted worker, with the real Anthropic SDK."""

import json

import pytest
import requests

from tests.support.harness import unique_model

anthropic = pytest.importorskip("anthropic")

WEATHER_TOOL = {
    "name": "get_weather",
    "description": "Weather for a city",
    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}
#: In the built-in model reference, so known to the Horde, and served by no worker of these tests.
REFERENCE_MODEL = "koboldcpp/Qwen3-32B"


def client(horde, key=None):
    return anthropic.Anthropic(base_url=horde.url, api_key=key or "0000000000", max_retries=0)


def hi(text="Hello"):
    return [{"role": "user", "content": text}]


def test_create_answers_a_message(horde):
    model = unique_model()
    horde.worker([model])
    message = client(horde, horde.user()).messages.create(
        model=model, max_tokens=256, system="Be brief.", messages=hi(), metadata={"user_id": "u-1"}
    )
    print("messages.create ->", message.id, message.stop_reason, message.content, message.usage)
    assert message.type == "message" and message.role == "assistant" and message.model == model
    assert [block.type for block in message.content] == ["text"]
    assert message.content[0].text == "You wrote: Hello"
    assert message.stop_reason == "end_turn"
    assert message.usage.input_tokens > 0 and message.usage.output_tokens > 0
    assert message.model_extra["x_horde"]["request_id"]
    # Authorization: Bearer works as well as x-api-key.
    raw = requests.post(
        horde.url + "/v1/messages",
        json={"model": model, "max_tokens": 64, "messages": hi()},
        headers={"Authorization": "Bearer 0000000000", "anthropic-version": "2023-06-01"},
        timeout=60,
    )
    assert raw.status_code == 200 and raw.json()["content"][0]["text"] == "You wrote: Hello"


def test_stream_relays_text_and_ends_with_message_stop(horde):
    model = unique_model()
    horde.worker([model])
    sdk = client(horde)
    with sdk.messages.stream(model=model, max_tokens=256, messages=hi("slow please")) as stream:
        pieces = list(stream.text_stream)
        final = stream.get_final_message()
    print("messages.stream ->", pieces, final.stop_reason)
    assert "".join(pieces) == "A slow answer, in steps." and len(pieces) > 1
    assert final.content[-1].text == "A slow answer, in steps." and final.stop_reason == "end_turn"

    response = requests.post(
        horde.url + "/v1/messages",
        json={"model": model, "max_tokens": 64, "messages": hi(), "stream": True},
        stream=True,
        timeout=60,
    )
    kinds = [line[len("event: ") :] for line in response.iter_lines(decode_unicode=True) if line.startswith("event: ")]
    print("stream events:", kinds)
    assert kinds[0] == "message_start" and kinds[-2:] == ["message_delta", "message_stop"]
    assert "ping" in kinds and "content_block_delta" in kinds


def test_tool_use_round_trip(horde):
    model = unique_model()
    horde.worker([model])
    sdk = client(horde, horde.user())
    conversation = hi("Weather in Paris?")
    first = sdk.messages.create(model=model, max_tokens=256, tools=[WEATHER_TOOL], messages=conversation)
    uses = [block for block in first.content if block.type == "tool_use"]
    assert first.stop_reason == "tool_use" and len(uses) == 1
    assert uses[0].name == "get_weather" and isinstance(uses[0].input, dict) and "city" in uses[0].input
    conversation += [
        {"role": "assistant", "content": [block.model_dump(exclude_none=True) for block in first.content]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": uses[0].id, "content": "sunny"}]},
    ]
    second = sdk.messages.create(model=model, max_tokens=256, tools=[WEATHER_TOOL], messages=conversation)
    print("tool_result ->", second.content[0].text)
    assert second.content[0].text == "The tool said what it said; here is my answer."

    with sdk.messages.stream(model=model, max_tokens=256, tools=[WEATHER_TOOL], messages=hi("Weather?")) as stream:
        streamed = stream.get_final_message()
    assert [block.type for block in streamed.content] == ["tool_use"] and "city" in streamed.content[0].input


def test_thinking_comes_back_as_a_thinking_block(horde):
    model = unique_model()
    horde.worker([model])
    sdk = client(horde)
    thought = sdk.messages.create(
        model=model, max_tokens=2048, thinking={"type": "enabled", "budget_tokens": 1024}, messages=hi("think first")
    )
    print("thinking ->", [(block.type, getattr(block, "thinking", None) or block.text) for block in thought.content])
    assert [block.type for block in thought.content] == ["thinking", "text"]
    assert thought.content[0].thinking == "Let me think about it." and thought.content[1].text == "The answer is 42."
    plain = sdk.messages.create(model=model, max_tokens=256, messages=hi("think first"))
    assert [block.type for block in plain.content] == ["text"]  # no thinking asked, no thinking block
    with sdk.messages.stream(
        model=model, max_tokens=2048, thinking={"type": "enabled", "budget_tokens": 1024}, messages=hi("think first")
    ) as stream:
        final = stream.get_final_message()
    assert [block.type for block in final.content] == ["thinking", "text"]


def test_count_tokens(horde):
    model = unique_model()
    horde.worker([model])
    sdk = client(horde)
    short = sdk.messages.count_tokens(model=model, messages=hi("Hi"))
    long = sdk.messages.count_tokens(model=model, messages=hi("Hi " * 400), tools=[WEATHER_TOOL])
    print("count_tokens ->", short.input_tokens, long.input_tokens)
    assert 0 < short.input_tokens < long.input_tokens


def test_errors_in_anthropic_shape(horde):
    model = unique_model()
    horde.worker([model])
    sdk = client(horde)
    with pytest.raises(anthropic.BadRequestError) as unknown:
        sdk.messages.create(model=model, max_tokens=64, messages=hi(), extra_body={"top_k": 5})
    error = unknown.value.body["error"]
    print("unknown field ->", unknown.value.status_code, error)
    assert error["type"] == "invalid_request_error" and "top_k" in error["message"]
    assert "UnsupportedChatParameter" in error["message"]
    with pytest.raises(anthropic.BadRequestError):
        sdk.messages.create(
            model=model, max_tokens=64, messages=hi(), tools=[{"type": "web_search_20250305", "name": "web_search"}]
        )
    missing = requests.post(horde.url + "/v1/messages", json={"model": model, "messages": hi()}, timeout=30)
    assert missing.status_code == 400 and missing.json()["type"] == "error"
    assert "max_tokens" in missing.json()["error"]["message"]
    with pytest.raises(anthropic.NotFoundError) as not_found:
        sdk.messages.create(model="nobody/declares-this", max_tokens=64, messages=hi())
    assert not_found.value.body["error"]["type"] == "not_found_error"
    with pytest.raises(anthropic.AuthenticationError):
        client(horde, "not-a-key").messages.create(model=model, max_tokens=64, messages=hi())
    with pytest.raises(anthropic.APIStatusError) as overloaded:
        sdk.messages.create(model=REFERENCE_MODEL, max_tokens=64, messages=hi())
    print("known model, no worker ->", overloaded.value.status_code, overloaded.value.body)
    assert overloaded.value.status_code == 529
    assert overloaded.value.body["error"]["type"] == "overloaded_error"
    assert "no_eligible_worker" in overloaded.value.body["error"]["message"]
    with pytest.raises(anthropic.InternalServerError) as faulted:
        sdk.messages.create(model=model, max_tokens=64, messages=hi("please fail"))
    assert "ChatRequestFaulted" in faulted.value.body["error"]["message"]
    assert "request_id: " in faulted.value.body["error"]["message"]
    with (
        pytest.raises(anthropic.APIStatusError),
        sdk.messages.stream(model=model, max_tokens=64, messages=hi("please fail")) as stream,
    ):
        stream.get_final_message()


def test_tool_result_errors_and_images_map_onto_the_chat_contract(horde):
    model = unique_model()
    horde.worker([model])
    png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8/5+hHgAHggJ/PchI7wAAAABJRU5ErkJggg=="
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": png}}
    seen = client(horde).messages.create(
        model=model, max_tokens=64, messages=[{"role": "user", "content": [{"type": "text", "text": "What?"}, image]}]
    )
    assert "1 image" in seen.content[0].text
    body = {"model": model, "max_tokens": 64, "messages": hi(), "thinking": {"type": "enabled", "budget_tokens": 10}}
    refused = requests.post(horde.url + "/v1/messages", json=body, timeout=30)
    assert refused.status_code == 400 and "thinking.budget_tokens" in refused.json()["error"]["message"]
    counted = requests.post(
        horde.url + "/v1/messages/count_tokens", json={"model": model, "messages": hi()}, timeout=30
    )
    assert counted.status_code == 200 and json.loads(counted.text)["input_tokens"] > 0


#: Claude Code 2.1.197's first request, cut down (docs/how-to/use-coding-agents.md): what it sends unprompted.
CLAUDE_CODE_BETAS = ["claude-code-20250219", "interleaved-thinking-2025-05-14", "context-management-2025-06-27"]
BASH_TOOL = {
    "name": "Bash",
    "description": "Run a shell command",
    "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
    "cache_control": {"type": "ephemeral"},
}
CLAUDE_CODE_NAMED = [
    "system[1].cache_control",
    "messages[0].content[0].cache_control",
    "tools[0].cache_control",
    "context_management.edits[0]",
    "metadata.user_id",
]


def claude_code_request(model, text="think first", **overrides):
    request = {
        "model": model,
        "max_tokens": 32000,
        "betas": CLAUDE_CODE_BETAS,
        "system": [
            {"type": "text", "text": "x-anthropic-billing-header: cc_version=2.1.197"},
            {"type": "text", "text": "You are a Claude agent.", "cache_control": {"type": "ephemeral"}},
        ],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": text, "cache_control": {"type": "ephemeral"}}]}
        ],
        "tools": [BASH_TOOL],
        "metadata": {"user_id": json.dumps({"device_id": "d", "account_uuid": "", "session_id": "s-1"})},
        "thinking": {"type": "enabled", "budget_tokens": 31999},
        "context_management": {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]},
        "timeout": 120,  # else the SDK asks for streaming above its own max_tokens guess
        "extra_query": {"beta": "true"},  # as Claude Code's (TypeScript) SDK sends its beta calls
    }
    request.update(overrides)
    return request


def test_claude_code_s_first_request_is_served_with_what_it_drops_named(horde):
    model = unique_model()
    horde.worker([model], "--max-length", "16384", "--max-context-length", "200000")
    sdk = client(horde, horde.user(kudos=100_000))
    raw = sdk.beta.messages.with_raw_response.create(**claude_code_request(model))
    message = raw.parse()
    print("Claude Code's request ->", raw.http_request.url, dict(raw.headers), message.content)
    assert raw.http_request.url.params["beta"] == "true"
    assert raw.headers["x-horde-ignored-parameters"] == ", ".join(CLAUDE_CODE_NAMED)
    assert raw.headers["x-horde-lowered-parameters"] == "max_tokens=16384, thinking.budget_tokens=16383"
    assert [block.type for block in message.content] == ["thinking", "text"]
    assert message.content[1].text == "The answer is 42."
    assert message.context_management.applied_edits == []
    x_horde = message.model_extra["x_horde"]
    assert x_horde["ignored_parameters"] == CLAUDE_CODE_NAMED
    assert x_horde["context_adjustments"][0] == {"from": 32000, "to": 16384, "reason": "worker_max_length"}

    with sdk.beta.messages.stream(**claude_code_request(model, "slow please")) as stream:
        text = "".join(stream.text_stream)
        headers = stream.response.headers
    assert text == "A slow answer, in steps."
    assert headers["x-horde-ignored-parameters"] == ", ".join(CLAUDE_CODE_NAMED)

    # Its newer default: adaptive thinking with an effort, and a system message among the messages.
    adaptive = claude_code_request(model, thinking={"type": "adaptive"})
    adaptive["messages"] = adaptive["messages"] + [{"role": "system", "content": "Agent types: claude."}]
    answered = sdk.beta.messages.create(**adaptive, extra_body={"output_config": {"effort": "high"}})
    assert [block.type for block in answered.content] == ["thinking", "text"]


def test_claude_code_s_tool_round_trip(horde):
    model = unique_model()
    horde.worker([model], "--max-length", "16384", "--max-context-length", "200000")
    sdk = client(horde, horde.user(kudos=100_000))
    first = sdk.beta.messages.create(**claude_code_request(model, "List the files", thinking={"type": "adaptive"}))
    uses = [block for block in first.content if block.type == "tool_use"]
    assert first.stop_reason == "tool_use" and [use.name for use in uses] == ["Bash"]
    result = {
        "type": "tool_result",
        "tool_use_id": uses[0].id,
        "content": "a.txt",
        "cache_control": {"type": "ephemeral"},
    }
    conversation = [
        *claude_code_request(model, "List the files")["messages"],
        {"role": "assistant", "content": [block.model_dump(exclude_none=True) for block in first.content]},
        {"role": "user", "content": [result]},
    ]
    raw = sdk.beta.messages.with_raw_response.create(**claude_code_request(model, messages=conversation))
    print("tool_result ->", raw.headers.get("x-horde-ignored-parameters"), raw.parse().content)
    assert raw.parse().content[-1].text == "The tool said what it said; here is my answer."
    assert "messages[2].content[0].cache_control" in raw.headers["x-horde-ignored-parameters"]


def test_the_ai_sdk_s_model_maximum_is_lowered(horde):
    """@ai-sdk/anthropic sends max_tokens 64000 for a claude-sonnet-4-5 name."""
    model = unique_model()
    horde.worker([model], "--max-length", "8192", "--max-context-length", "200000")
    raw = client(horde, horde.user(kudos=100_000)).messages.with_raw_response.create(
        model=model, max_tokens=64000, messages=hi(), timeout=120
    )
    assert raw.parse().content[0].text == "You wrote: Hello"
    assert raw.headers["x-horde-lowered-parameters"] == "max_tokens=8192"
    assert "x-horde-ignored-parameters" not in raw.headers
