"""Guide: horde options, reasoning, images, tools, conformance, structured output, faults, abandonment."""

import asyncio
import json
import socket

import openai
import pydantic
import pytest

from tests.support.harness import unique_model
from tests.support.processes import wait_until
from tests.support.requests_by_model import request_ids_for_model

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8/5+hHgAHggJ/PchI7wAAAABJRU5ErkJggg=="
WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather for a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}


def hi(text="Hi"):
    return [{"role": "user", "content": text}]


def test_only_restricts_the_worker_and_adjustments(horde):
    model = unique_model()
    horde.worker([model], "--max-length", "512", "--max-context-length", "8192")
    chosen = horde.worker([model], "--max-length", "512", "--max-context-length", "8192")
    client = horde.openai(horde.user())
    worker_id = _worker_id(horde, chosen.worker_name)
    for _ in range(2):
        completion = client.chat.completions.create(
            model=model, messages=hi(), extra_body={"horde": {"only": [worker_id]}}
        )
        assert completion.model_extra["x_horde"]["worker_id"] == worker_id
    assert completion.model_extra["x_horde"]["context_adjustments"] is None

    long_history = []
    for turn in range(60):
        long_history += [
            {"role": "user", "content": f"question {turn} " + "words " * 60},
            {"role": "assistant", "content": "answer " * 60},
        ]
    long_history.append({"role": "user", "content": "last question"})
    grown = client.chat.completions.create(
        model=model, messages=long_history[-41:], max_tokens=64, extra_body={"horde": {"context_fitting": "grow"}}
    )
    reasons = [item["reason"] for item in grown.model_extra["x_horde"]["context_adjustments"]]
    assert reasons == ["grow"]
    truncated = client.chat.completions.create(model=model, messages=long_history, max_tokens=64)
    adjustments = truncated.model_extra["x_horde"]["context_adjustments"]
    assert [item["reason"] for item in adjustments] == ["grow", "truncate_oldest"]
    assert adjustments[1]["dropped_messages"] > 0
    with pytest.raises(openai.BadRequestError) as raised:
        client.chat.completions.create(
            model=model, messages=long_history, max_tokens=64, extra_body={"horde": {"context_fitting": "reject"}}
        )
    assert raised.value.body["code"] == "no_worker_supports_limit"


def test_reasoning_content_and_include_reasoning_false(horde):
    model = unique_model()
    horde.worker([model])
    client = horde.openai()
    completion = client.chat.completions.create(model=model, messages=hi("think first"))
    message = completion.choices[0].message
    assert message.content == "The answer is 42."
    assert message.model_extra["reasoning_content"] == "Let me think about it."
    assert completion.usage.completion_tokens_details.reasoning_tokens > 0
    hidden = client.chat.completions.create(
        model=model, messages=hi("think first"), extra_body={"horde": {"include_reasoning": False}}
    )
    assert "reasoning_content" not in hidden.choices[0].message.model_dump()
    assert hidden.usage.completion_tokens_details.reasoning_tokens > 0


def test_image_reply_and_kudos(horde):
    model = unique_model()
    horde.worker([model])
    client = horde.openai(horde.user(kudos=100))
    image = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is this?"},
                {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}},
            ],
        }
    ]
    seen = client.chat.completions.create(model=model, messages=image)
    plain = client.chat.completions.create(model=model, messages=[{"role": "user", "content": "What is this?"}])
    assert "1 image" in seen.choices[0].message.content
    assert seen.model_extra["x_horde"]["kudos"] > plain.model_extra["x_horde"]["kudos"]
    card = client.models.retrieve(model).model_dump()
    assert "image" in card["architecture"]["input_modalities"]


def test_tool_round_trip_replaying_the_message_object(horde):
    model = unique_model()
    horde.worker([model])
    client = horde.openai()
    messages = [{"role": "user", "content": "What is the weather in Paris?"}]
    first = client.chat.completions.create(model=model, messages=messages, tools=[WEATHER_TOOL])
    call = first.choices[0].message.tool_calls[0]
    assert first.choices[0].finish_reason == "tool_calls"
    assert first.choices[0].message.content is None
    assert call.function.name == "get_weather"
    assert "city" in json.loads(call.function.arguments)
    messages.append(first.choices[0].message)
    messages.append({"role": "tool", "tool_call_id": call.id, "content": "Sunny, 21 C"})
    second = client.chat.completions.create(model=model, messages=messages, tools=[WEATHER_TOOL])
    assert second.choices[0].finish_reason == "stop"
    assert second.choices[0].message.content and not second.choices[0].message.tool_calls


def test_forced_tool_is_404_under_strict_and_served_under_best_effort(horde):
    model = unique_model()
    horde.worker([model], "--guarantees", "schema_adherence,prompt_fit")
    client = horde.openai()
    card = client.models.retrieve(model).model_dump()
    assert "tool_choice" not in card["supported_parameters"]
    forced = {"type": "function", "function": {"name": "get_weather"}}
    with pytest.raises(openai.NotFoundError) as raised:
        client.chat.completions.create(model=model, messages=hi("weather?"), tools=[WEATHER_TOOL], tool_choice=forced)
    assert raised.value.body["code"] == "no_worker_supports_features"
    assert "tool_choice" in raised.value.body["message"]
    served = client.chat.completions.create(
        model=model,
        messages=hi("weather?"),
        tools=[WEATHER_TOOL],
        tool_choice=forced,
        extra_body={"horde": {"conformance": "best_effort"}},
    )
    assert served.choices[0].message.tool_calls[0].function.name == "get_weather"
    assert served.choices[0].finish_reason == "stop"


class Person(pydantic.BaseModel):
    name: str
    age: int


def test_structured_output_json_object_json_schema_and_parse(horde):
    model = unique_model()
    horde.worker([model])
    client = horde.openai()
    as_object = client.chat.completions.create(
        model=model, messages=hi("json please"), response_format={"type": "json_object"}
    )
    assert isinstance(json.loads(as_object.choices[0].message.content), dict)
    schema = {
        "type": "object",
        "properties": {"title": {"type": "string"}, "year": {"type": "integer"}},
        "required": ["title", "year"],
        "additionalProperties": False,
    }
    as_schema = client.chat.completions.create(
        model=model,
        messages=hi("a film"),
        response_format={"type": "json_schema", "json_schema": {"name": "film", "schema": schema, "strict": True}},
    )
    assert {"title", "year"} <= set(json.loads(as_schema.choices[0].message.content))
    parsed = client.chat.completions.parse(model=model, messages=hi("a person"), response_format=Person)
    assert isinstance(parsed.choices[0].message.parsed, Person)


def test_faulted_request_reports_the_worker_fault_and_the_refusal(horde):
    model = unique_model()
    horde.worker([model])
    client = horde.openai()
    with pytest.raises(openai.APIStatusError) as raised:
        client.chat.completions.create(model=model, messages=hi("please fail"))
    body = raised.value.body
    assert body["code"] == "ChatRequestFaulted" and body["metadata"]["rc"] == "ChatWorkerFault"
    assert "after its worker reported a fault (ChatWorkerFault): The worker could not fit the prompt" in body["message"]
    assert raised.value.response.headers["x-should-retry"] == "false"
    with pytest.raises(openai.APIStatusError) as raised:
        client.chat.completions.create(model=model, messages=hi("bad json"), response_format={"type": "json_object"})
    body = raised.value.body
    assert body["metadata"]["rc"] == "ChatSubmitNonconformant"
    assert (
        "after refusing a worker's reply (ChatSubmitNonconformant): The request's 'response_format' is "
        "'json_object', so the reply content has to be JSON." in body["message"]
    )


def test_async_client(horde):
    model = unique_model()
    horde.worker([model])

    async def run():
        client = horde.async_openai()
        results = await asyncio.gather(
            *[client.chat.completions.create(model=model, messages=hi(f"n{i}")) for i in range(3)]
        )
        await client.close()
        return results

    results = asyncio.run(run())
    assert sorted(r.choices[0].message.content for r in results) == ["You wrote: n0", "You wrote: n1", "You wrote: n2"]


def test_closing_the_connection_cancels_the_request(horde):
    model = unique_model()
    worker = horde.worker([model])
    key = horde.user()
    body = json.dumps({"model": model, "messages": hi("a very long answer")}).encode()
    sock = socket.create_connection(("127.0.0.1", horde.server.port))
    sock.sendall(
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        + f"Authorization: Bearer {key}\r\nContent-Length: {len(body)}\r\n\r\n".encode()
        + body
    )
    request_id = wait_until(lambda: _latest_request(horde, model), what="the request to be queued")
    wait_until(lambda: _state(horde, request_id) == "processing", what="a worker to take it")
    sock.close()
    wait_until(lambda: _state(horde, request_id) == "cancelled", timeout_s=15, what="the cancel")
    assert worker.alive()


def _worker_id(horde, name):
    from horde.workers.models import Worker

    with horde.runtime.db.transaction() as session:
        return session.query(Worker).filter_by(name=name).one().id


def _latest_request(horde, model):
    ids = request_ids_for_model(horde.runtime.db, model)
    return ids[-1] if ids else None


def _state(horde, request_id):
    from horde.chat.models import ChatRequest

    with horde.runtime.db.transaction() as session:
        return session.get(ChatRequest, request_id).state


def test_prompt_cache_key_and_user_are_accepted_and_user_is_named(horde):
    """Codex and the SDKs send prompt_cache_key; the Horde takes it as the conversation's key (conversation
    affinity), so it is not named; user is, as the Horde does nothing with it. Defaults (store false, n 1) are not
    named."""
    model = unique_model()
    horde.worker([model])
    client = horde.openai(horde.user())
    raw = client.chat.completions.with_raw_response.create(
        model=model, messages=hi(), prompt_cache_key="session-1", user="end-user-7", store=False, n=1
    )
    completion = raw.parse()
    print("named ->", raw.headers.get("x-horde-ignored-parameters"), completion.model_extra["x_horde"])
    assert raw.headers["x-horde-ignored-parameters"] == "user"
    assert completion.model_extra["x_horde"]["ignored_parameters"] == ["user"]
    stream = client.chat.completions.with_raw_response.create(
        model=model, messages=hi(), prompt_cache_key="session-1", stream=True
    )
    assert "x-horde-ignored-parameters" not in stream.headers
    chunks = list(stream.parse())
    finals = [chunk.model_extra["x_horde"] for chunk in chunks if chunk.model_extra.get("x_horde")]
    assert [final["ignored_parameters"] for final in finals] == [[]]
    with pytest.raises(openai.BadRequestError) as refused:
        client.chat.completions.create(model=model, messages=hi(), max_tokens=32000)
    assert refused.value.body["param"] == "max_tokens"
