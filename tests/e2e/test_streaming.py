"""Streaming with the real OpenAI SDK: event order, live progress, tool calls, errors, divergence, cancel."""

import json
from concurrent.futures import ThreadPoolExecutor

import openai
import pytest
import requests

from horde.accounts.models import KudosEntry
from horde.chat.models import ChatJob, ChatRequest
from tests.support.harness import unique_model
from tests.support.openapi import validate
from tests.support.processes import wait_until

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}


def raw_stream(horde, body, key=None):
    """The SSE lines of a stream: (comments, JSON payloads, saw_done)."""
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    response = requests.post(
        horde.url + "/v1/chat/completions", json=dict(body, stream=True), headers=headers, stream=True, timeout=60
    )
    assert response.status_code == 200, response.text
    assert response.headers["x-should-retry"] == "false"
    comments, payloads, done = [], [], False
    for line in response.iter_lines(decode_unicode=True):
        if line.startswith(":"):
            comments.append(line)
        elif line.startswith("data: "):
            data = line[len("data: ") :]
            if data == "[DONE]":
                done = True
            else:
                payloads.append(json.loads(data))
    return comments, payloads, done


def test_buffered_text_reply_is_four_chunks_that_validate(horde):
    model = unique_model()
    horde.worker([model])
    _, chunks, done = raw_stream(
        horde,
        {"model": model, "messages": [{"role": "user", "content": "Hi"}], "stream_options": {"include_usage": True}},
    )
    assert done and len(chunks) == 4
    role, content, finish, usage = chunks
    assert role["choices"][0]["delta"] == {"role": "assistant"}
    assert content["choices"][0]["delta"] == {"content": "You wrote: Hi"}
    assert finish["choices"][0]["finish_reason"] == "stop" and finish["choices"][0]["delta"] == {}
    assert finish["choices"][0]["native_finish_reason"] == "stop"
    assert finish["x_horde"]["request_id"] and finish["x_horde"]["kudos"] >= 1
    assert usage["choices"] == [] and usage["usage"]["total_tokens"] > 0
    assert {chunk["id"] for chunk in chunks} == {role["id"]}
    assert len({chunk.get("system_fingerprint") for chunk in chunks}) == 1
    assert finish["model"] == usage["model"] == model
    for chunk in chunks:
        validate(chunk, "CreateChatCompletionStreamResponse")


def test_sdk_text_and_reasoning_stream_without_usage(horde):
    model = unique_model()
    horde.worker([model])
    client = horde.openai()
    chunks = list(
        client.chat.completions.create(model=model, stream=True, messages=[{"role": "user", "content": "think hard"}])
    )
    deltas = [chunk.choices[0].delta for chunk in chunks if chunk.choices]
    reasoning = "".join(d.model_extra.get("reasoning_content") or "" for d in deltas)
    content = "".join(d.content or "" for d in deltas)
    assert reasoning == "Let me think about it." and content == "The answer is 42."
    first_reasoning = next(i for i, d in enumerate(deltas) if d.model_extra.get("reasoning_content"))
    first_content = next(i for i, d in enumerate(deltas) if d.content)
    assert first_reasoning < first_content
    assert all(chunk.usage is None for chunk in chunks)


def test_live_progress_gives_more_chunks_and_the_same_final_message(horde):
    model = unique_model()
    horde.worker([model], "--threads", "2")  # the streamed and the whole answer are generated side by side
    client = horde.openai()
    messages = [{"role": "user", "content": "slow please"}]
    with ThreadPoolExecutor(1) as pool:
        answering = pool.submit(client.chat.completions.create, model=model, messages=messages)
        with client.chat.completions.stream(model=model, messages=messages) as stream:
            events = [event.type for event in stream]
            final = stream.get_final_completion()
        whole = answering.result(timeout=60)
    assert events.count("content.delta") > 1
    assert final.choices[0].message.content == whole.choices[0].message.content
    assert (
        final.choices[0].message.model_extra["reasoning_content"]
        == whole.choices[0].message.model_extra["reasoning_content"]
    )


def test_tool_call_stream_and_replayed_final_message(horde):
    model = unique_model()
    horde.worker([model])
    client = horde.openai()
    messages = [{"role": "user", "content": "weather in Oslo?"}]
    _, chunks, _ = raw_stream(horde, {"model": model, "messages": messages, "tools": [WEATHER_TOOL]})
    tool_chunks = [c for c in chunks if c["choices"] and c["choices"][0]["delta"].get("tool_calls")]
    assert len(tool_chunks) == 1
    delta = tool_chunks[0]["choices"][0]["delta"]
    assert "content" not in delta and delta["tool_calls"][0]["index"] == 0
    for chunk in chunks:
        validate(chunk, "CreateChatCompletionStreamResponse")
    with client.chat.completions.stream(model=model, messages=messages, tools=[WEATHER_TOOL]) as stream:
        final = stream.get_final_completion()
    message = final.choices[0].message
    assert message.role == "assistant" and message.tool_calls[0].function.name == "get_weather"
    messages.append(message)
    messages.append({"role": "tool", "tool_call_id": message.tool_calls[0].id, "content": "rain"})
    follow_up = client.chat.completions.create(model=model, messages=messages, tools=[WEATHER_TOOL])
    assert follow_up.choices[0].finish_reason == "stop"


def test_stream_error_event_raises_in_the_sdk(horde):
    model = unique_model()
    horde.worker([model])
    with pytest.raises(openai.APIError) as raised:
        list(
            horde.openai().chat.completions.create(
                model=model, stream=True, messages=[{"role": "user", "content": "please fail"}]
            )
        )
    assert raised.value.code == "ChatRequestFaulted"


def test_refusal_at_the_first_status_read_is_an_http_error(horde):
    response = requests.post(
        horde.url + "/v1/chat/completions",
        json={"model": "nobody/has-it", "stream": True, "messages": [{"role": "user", "content": "x"}]},
    )
    assert response.status_code == 404 and response.json()["error"]["code"] == "model_not_found"


def test_diverged_stream_when_the_worker_stops_after_progress(horde):
    model = unique_model()
    key = horde.user()
    _pop(horde, key, model)  # a hand-driven worker that declares progress
    response = requests.post(
        horde.url + "/v1/chat/completions",
        stream=True,
        timeout=60,
        json={"model": model, "stream": True, "messages": [{"role": "user", "content": "x"}]},
    )
    lines = response.iter_lines(decode_unicode=True)
    job = wait_until(lambda: _pop(horde, key, model)["id"], what="the job")
    requests.post(
        horde.url + "/api/v2/generate/chat/progress",
        json={"id": job, "content": "Partial text"},
        headers={"apikey": key},
    )
    payloads = []
    for line in lines:
        if line.startswith("data: "):
            payloads.append(line[6:])
            if "Partial" in line:
                requests.post(
                    horde.url + "/api/v2/generate/chat/fault",
                    json={"id": job, "reason": "oom"},
                    headers={"apikey": key},
                )
    errors = [json.loads(p)["error"] for p in payloads if p != "[DONE]" and "error" in json.loads(p)]
    assert errors and errors[0]["code"] == "ChatStreamDiverged"
    assert payloads[-1] == "[DONE]"


def test_closing_a_stream_cancels_and_charges_what_was_streamed(horde):
    model = unique_model()
    worker = horde.worker([model], "--progress-interval", "0.2")
    key = horde.user(kudos=50)
    client = horde.openai(key)
    stream = client.chat.completions.create(
        model=model, stream=True, messages=[{"role": "user", "content": "a very long story"}]
    )
    received = ""
    for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            received += chunk.choices[0].delta.content
            if len(received) > 5:
                break
    stream.close()
    request_id = _request_of_completion(horde, chunk.id)
    wait_until(lambda: _request(horde, request_id).state == "cancelled", timeout_s=15, what="the cancel")
    with horde.runtime.db.transaction() as session:
        job = session.query(ChatJob).filter_by(request_id=request_id).one()
        assert job.state == "cancelled"
        charge = session.query(KudosEntry).filter_by(request_id=request_id, kind="charge").one()
        assert charge.amount < 0
    job_id = job.id
    wait_until(
        lambda: f"job {job_id} stopped" in worker.output(),
        timeout_s=10,
        what="the worker to learn of the cancel from its next progress answer",
    )
    assert worker.alive()


def _pop(horde, key, model):
    return requests.post(
        horde.url + "/api/v2/generate/chat/pop",
        headers={"apikey": key},
        json={
            "name": f"hand-{model}",
            "models": [model],
            "max_length": 512,
            "max_context_length": 4096,
            "features": ["progress"],
        },
    ).json()


def _request(horde, request_id):
    with horde.runtime.db.transaction() as session:
        return session.get(ChatRequest, request_id)


def _request_of_completion(horde, completion_id):
    with horde.runtime.db.transaction() as session:
        for request in session.query(ChatRequest).all():
            if "chatcmpl-" + request.id.replace("-", "") == completion_id:
                return request.id
    raise AssertionError(f"no request for {completion_id}")
