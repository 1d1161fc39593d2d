"""OpenAI's Responses API against a real server and a scripted worker, with the real OpenAI SDK."""

import json

import openai
import pydantic
import pytest
import requests

from tests.support.harness import RULES_PATH, unique_model, write_rules
from tests.support.openapi import validate

WEATHER_TOOL = {
    "type": "function",
    "name": "get_weather",
    "description": "Weather for a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}


def raw_events(horde, body, key=None):
    """The comments and the (event name, payload) pairs of a /v1/responses stream."""
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    response = requests.post(
        horde.url + "/v1/responses", json=dict(body, stream=True), headers=headers, stream=True, timeout=60
    )
    assert response.status_code == 200, response.text
    comments, events, name = [], [], None
    for line in response.iter_lines(decode_unicode=True):
        if line.startswith(":"):
            comments.append(line)
        elif line.startswith("event: "):
            name = line[len("event: ") :]
        elif line.startswith("data: "):
            payload = json.loads(line[len("data: ") :])
            assert payload["type"] == name
            events.append(payload)
    return comments, events


def test_create_retrieve_delete(horde):
    model = unique_model()
    horde.worker([model])
    client = horde.openai(horde.user())
    raw = client.responses.with_raw_response.create(
        model=model, input="Hello there", instructions="Be brief.", metadata={"topic": "greeting"}
    )
    body = raw.http_response.json()
    validate(body, "Response")
    response = raw.parse()
    print("responses.create ->", response.id, response.status, repr(response.output_text))
    assert response.output_text == "You wrote: Hello there"
    assert response.status == "completed" and response.metadata == {"topic": "greeting"}
    assert response.usage.input_tokens > 0 and response.usage.output_tokens > 0
    assert body["x_horde"]["request_id"] and body["model"] == model

    again = client.responses.retrieve(response.id)
    assert again.id == response.id and again.output_text == response.output_text
    client.responses.delete(response.id)
    with pytest.raises(openai.NotFoundError) as gone:
        client.responses.retrieve(response.id)
    assert gone.value.body["code"] == "response_not_found" and gone.value.body["param"] == "response_id"
    other = horde.openai(horde.user())
    kept = client.responses.create(model=model, input="Keep me")
    with pytest.raises(openai.NotFoundError):
        other.responses.retrieve(kept.id)  # another user's response is not found
    unstored = client.responses.create(model=model, input="Forget me", store=False)
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(unstored.id)


def test_previous_response_id_continues_the_conversation(horde):
    model = unique_model()
    horde.worker([model])
    client = horde.openai(horde.user())
    first = client.responses.create(model=model, input="My name is Ada.")
    second = client.responses.create(model=model, input="What is my name?", previous_response_id=first.id)
    assert second.output_text == "You wrote: What is my name?"
    assert second.previous_response_id == first.id
    # The history went to the worker: the prompt grew by the first turn.
    assert second.usage.input_tokens > first.usage.input_tokens
    with pytest.raises(openai.NotFoundError) as unknown:
        client.responses.create(model=model, input="Hi", previous_response_id="resp_doesnotexist")
    print("unknown previous_response_id ->", unknown.value.status_code, unknown.value.body)
    assert unknown.value.body["param"] == "previous_response_id"


def test_stream_events_validate_and_relay_progress(horde):
    model = unique_model()
    horde.worker([model])
    comments, events = raw_events(horde, {"model": model, "input": "slow please"})
    kinds = [event["type"] for event in events]
    print("stream events:", kinds)
    for event in events:
        validate(event, "ResponseStreamEvent")
    assert kinds[:2] == ["response.created", "response.in_progress"] and kinds[-1] == "response.completed"
    assert [event["sequence_number"] for event in events] == list(range(len(events)))
    assert comments and comments[0].startswith(": horde queue_position=")
    text = "".join(event["delta"] for event in events if event["type"] == "response.output_text.delta")
    assert text == "A slow answer, in steps."
    assert kinds.count("response.output_text.delta") > 1  # relayed from progress, not sent whole at the end
    reasoning = "".join(event["delta"] for event in events if event["type"] == "response.reasoning_summary_text.delta")
    assert reasoning == "Thinking slowly."
    final = events[-1]["response"]
    assert [item["type"] for item in final["output"]] == ["reasoning", "message"]
    assert final["output"][1]["content"][0]["text"] == text

    client = horde.openai()
    with client.responses.stream(model=model, input="Hi") as sdk_stream:
        deltas = [event.delta for event in sdk_stream if event.type == "response.output_text.delta"]
        final_response = sdk_stream.get_final_response()
    assert "".join(deltas) == final_response.output_text == "You wrote: Hi"
    created = client.responses.create(model=model, input="Hello", stream=True)
    assert [event.type for event in created][-1] == "response.completed"


def test_parse_with_a_pydantic_model(horde):
    class Weather(pydantic.BaseModel):
        city: str
        degrees: int

    model = unique_model()
    horde.worker([model])
    parsed = horde.openai().responses.parse(model=model, input="Weather in Paris as JSON", text_format=Weather)
    print("responses.parse ->", parsed.output_parsed)
    assert isinstance(parsed.output_parsed, Weather)


def test_function_tool_round_trip(horde):
    model = unique_model()
    horde.worker([model])
    client = horde.openai(horde.user())
    raw = client.responses.with_raw_response.create(model=model, input="Weather in Paris?", tools=[WEATHER_TOOL])
    validate(raw.http_response.json(), "Response")
    first = raw.parse()
    calls = [item for item in first.output if item.type == "function_call"]
    assert len(calls) == 1 and calls[0].name == "get_weather" and "city" in json.loads(calls[0].arguments)
    output = {"type": "function_call_output", "call_id": calls[0].call_id, "output": "sunny, 21 C"}
    second = client.responses.create(model=model, previous_response_id=first.id, input=[output], tools=[WEATHER_TOOL])
    print("function_call_output ->", repr(second.output_text))
    assert second.output_text == "The tool said what it said; here is my answer."
    # The same round trip without stored state: the items sent back by the client.
    replayed = client.responses.create(
        model=model,
        store=False,
        tools=[WEATHER_TOOL],
        input=[{"role": "user", "content": "Weather in Paris?"}, calls[0].model_dump(exclude_none=True), output],
    )
    assert replayed.output_text == second.output_text

    _, events = raw_events(horde, {"model": model, "input": "Weather?", "tools": [WEATHER_TOOL]})
    for event in events:
        validate(event, "ResponseStreamEvent")
    done = [event for event in events if event["type"] == "response.function_call_arguments.done"]
    assert len(done) == 1 and done[0]["name"] == "get_weather"


def test_refusals_name_the_field(horde):
    model = unique_model()
    horde.worker([model])
    client = horde.openai()
    cases = [
        ({"model": model, "input": "Hi", "frobnicate": 1}, "frobnicate"),
        ({"model": model, "input": "Hi", "tools": [{"type": "custom", "name": "apply_patch"}]}, "tools[0].type"),
        ({"model": model, "input": "Hi", "tools": [{"type": "web_search"}], "tool_choice": "required"}, "tool_choice"),
        ({"model": model, "input": "Hi", "include": ["file_search_call.results"]}, "include[0]"),
        ({"model": model, "input": "Hi", "background": True, "store": False}, "background"),
        ({"model": model, "input": [{"type": "web_search_call", "id": "x"}]}, "input[0].type"),
        ({"model": model, "input": "Hi", "max_output_tokens": 1}, "max_output_tokens"),
        ({"model": model}, "input"),
    ]
    for body, param in cases:
        response = requests.post(horde.url + "/v1/responses", json=body, timeout=30)
        print("refused:", param, response.status_code, response.json()["error"]["code"])
        assert response.status_code == 400 and response.json()["error"]["param"] == param, response.text
    with pytest.raises(openai.BadRequestError) as forced:
        client.responses.create(
            model=model, input="Hi", tools=[{"type": "web_search"}], tool_choice={"type": "web_search_preview"}
        )
    assert forced.value.body["param"] == "tool_choice"


def test_reasoning_item_and_incomplete_status(horde, tmp_path):
    model = unique_model()
    rules = json.loads(RULES_PATH.read_text())["rules"]
    horde.worker(
        [model],
        rules=write_rules(
            tmp_path,
            [{"match": {"contains": "cut short"}, "reply": {"content": "Cut", "finish_reason": "length"}}, *rules],
        ),
    )
    client = horde.openai()
    thought = client.responses.create(
        model=model,
        input="think first",
        reasoning={"effort": "low", "summary": "auto"},
        extra_body={"horde": {"include_reasoning": True}},
    )
    kinds = [item.type for item in thought.output]
    assert kinds == ["reasoning", "message"] and thought.output[0].summary[0].text == "Let me think about it."
    assert thought.usage.output_tokens_details.reasoning_tokens > 0
    cut = client.responses.with_raw_response.create(model=model, input="cut short", max_output_tokens=16)
    validate(cut.http_response.json(), "Response")
    assert cut.parse().status == "incomplete" and cut.parse().incomplete_details.reason == "max_output_tokens"


def test_agents_sdk_with_a_function_tool(horde):
    agents = pytest.importorskip("agents")
    agents.set_tracing_disabled(True)
    model = unique_model()
    horde.worker([model])
    asked = []

    @agents.function_tool
    def get_weather(city: str) -> str:
        """Weather for a city."""
        asked.append(city)
        return f"sunny in {city}"

    client = horde.async_openai(horde.user())
    agent = agents.Agent(
        name="weather",
        instructions="Answer briefly.",
        tools=[get_weather],
        model=agents.OpenAIResponsesModel(model=model, openai_client=client),
    )
    result = agents.Runner.run_sync(agent, "Weather in Paris?")
    print("Agents SDK ->", asked, repr(result.final_output))
    assert len(asked) == 1
    assert result.final_output == "The tool said what it said; here is my answer."

    # A model name with `/` through the SDK's default provider: the `openai/` prefix picks OpenAI's provider.
    agents.set_default_openai_client(client, use_for_tracing=False)
    prefixed = agents.Agent(name="plain", model=f"openai/{model}")
    assert agents.Runner.run_sync(prefixed, "Hello").final_output == "You wrote: Hello"


EXEC_COMMAND = {
    "type": "function",
    "name": "exec_command",
    "description": "Runs a command.",
    "strict": False,
    "parameters": {
        "type": "object",
        "properties": {"cmd": {"type": "string"}},
        "required": ["cmd"],
        "additionalProperties": False,
    },
}
MULTI_AGENT = {
    "type": "namespace",
    "name": "multi_agent_v1",
    "description": "Tools for spawning and managing sub-agents.",
    "tools": [
        {
            "type": "function",
            "name": "close_agent",
            "description": "Close an agent.",
            "strict": False,
            "parameters": {
                "type": "object",
                "properties": {"target": {"type": "string"}},
                "required": ["target"],
                "additionalProperties": False,
            },
        }
    ],
}
CODEX_NAMED = "tools[2], client_metadata"


def codex_request(model, text, tools=(EXEC_COMMAND, MULTI_AGENT, {"type": "web_search"}), **overrides):
    """Codex CLI 0.171's request (docs/how-to/use-coding-agents.md), as its keys go through the OpenAI SDK."""
    request = {
        "model": model,
        "instructions": "You are Codex.",
        "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}],
        "tools": list(tools),
        "tool_choice": "auto",
        "parallel_tool_calls": True,
        "reasoning": {"summary": "auto"},
        "store": False,
        "include": ["reasoning.encrypted_content"],
        "prompt_cache_key": "01a2425e-d067-77e1-a188-fbe9a5edb2da",
        "extra_body": {"client_metadata": {"session_id": "01a2425e-d067-77e1-a188-fbe9a5edb2da"}},
    }
    request.update(overrides)
    return request


def test_codex_s_request_and_its_encrypted_reasoning_round_trip(horde):
    model = unique_model()
    horde.worker([model], "--max-length", "16384", "--max-context-length", "200000")
    key = horde.user(kudos=100_000)
    client = horde.openai(key)
    raw = client.responses.with_raw_response.create(**codex_request(model, "think first"))
    body = raw.http_response.json()
    validate(body, "Response")
    print("Codex's request ->", dict(raw.headers), [item["type"] for item in body["output"]])
    assert raw.headers["x-horde-ignored-parameters"] == CODEX_NAMED
    assert body["x_horde"]["ignored_parameters"] == CODEX_NAMED.split(", ")
    reasoning, message = raw.parse().output
    assert reasoning.type == "reasoning" and reasoning.encrypted_content
    assert "think" not in reasoning.encrypted_content and message.content[0].text == "The answer is 42."

    turn = [*codex_request(model, "think first")["input"], reasoning.model_dump(exclude_none=True)]
    follow_up = [*turn, {"role": "user", "content": "Hello"}]
    again = client.responses.create(**codex_request(model, "Hello", tools=(), input=follow_up))
    assert again.output_text == "You wrote: Hello"
    forged = dict(turn[1], encrypted_content=reasoning.encrypted_content[:-4] + "AAAA")
    for sender, item in ((client, forged), (horde.openai(horde.user()), turn[1])):
        with pytest.raises(openai.BadRequestError) as refused:
            sender.responses.create(**codex_request(model, "Hello", input=[turn[0], item]))
        print("sealed reasoning refused ->", refused.value.body)
        assert refused.value.body["param"] == "input[1].encrypted_content"


def test_codex_s_namespace_tools_are_called_back_in_their_namespace(horde):
    model = unique_model()
    horde.worker([model], "--max-length", "16384", "--max-context-length", "200000")
    client = horde.openai(horde.user(kudos=100_000))
    tools = (MULTI_AGENT, EXEC_COMMAND, {"type": "web_search"})  # the scripted worker calls the first tool
    first = client.responses.create(**codex_request(model, "Close it", tools=tools))
    calls = [item for item in first.output if item.type == "function_call"]
    print("namespace call ->", [call.model_dump(exclude_none=True) for call in calls])
    assert [(call.model_extra.get("namespace") or getattr(call, "namespace", None), call.name) for call in calls] == [
        ("multi_agent_v1", "close_agent")
    ]
    output = {"type": "function_call_output", "call_id": calls[0].call_id, "output": "closed"}
    back = [*codex_request(model, "Close it")["input"], calls[0].model_dump(exclude_none=True), output]
    second = client.responses.create(**codex_request(model, "Close it", tools=tools, input=back))
    assert second.output_text == "The tool said what it said; here is my answer."

    _, events = raw_events(
        horde, {k: v for k, v in codex_request(model, "Close it", tools=tools).items() if k != "extra_body"}
    )
    for event in events:
        validate(event, "ResponseStreamEvent")
    done = [event["item"] for event in events if event["type"] == "response.output_item.done"]
    assert [(item.get("namespace"), item["name"]) for item in done if item["type"] == "function_call"] == [
        ("multi_agent_v1", "close_agent")
    ]


def test_max_output_tokens_above_the_ceiling_is_lowered(horde):
    model = unique_model()
    horde.worker([model], "--max-length", "4096", "--max-context-length", "200000")
    raw = horde.openai(horde.user(kudos=100_000)).responses.with_raw_response.create(
        model=model, input="Hello", max_output_tokens=128000
    )
    assert raw.parse().output_text == "You wrote: Hello"
    assert raw.headers["x-horde-lowered-parameters"] == "max_output_tokens=4096"
    assert raw.http_response.json()["x_horde"]["context_adjustments"][0] == {
        "from": 128000,
        "to": 4096,
        "reason": "worker_max_length",
    }


def test_a_stored_reasoning_item_referenced_by_id(horde):
    """The AI SDK's OpenAI provider sends a stored response's reasoning back as an item_reference."""
    model = unique_model()
    horde.worker([model])
    client = horde.openai(horde.user())
    first = client.responses.create(model=model, input="think first")
    reasoning = first.output[0]
    assert reasoning.type == "reasoning"
    follow_up = [
        {"role": "user", "content": "think first"},
        {"type": "item_reference", "id": reasoning.id},
        {"role": "assistant", "content": first.output_text},
        {"role": "user", "content": "Hello"},
    ]
    assert client.responses.create(model=model, input=follow_up).output_text == "You wrote: Hello"
    with pytest.raises(openai.NotFoundError) as unknown:
        horde.openai(horde.user()).responses.create(model=model, input=follow_up)  # another user's item
    assert unknown.value.body["param"] == "input[1].id"
