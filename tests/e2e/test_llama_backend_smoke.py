"""Smoke test of the real llama.cpp backend (tests.support.llama_backend).

Skipped unless ``HORDE_TEST_LLAMA=1``.  The first run on a machine builds
``llama-server`` (~7.5 minutes on 2 cores, cached in ~/.cache/horde-llama or
$HORDE_LLAMA_CACHE); later runs start the server in well under a second.

    HORDE_TEST_LLAMA=1 .venv/bin/python -m pytest tests/e2e/test_llama_backend_smoke.py -v
"""

from __future__ import annotations

import json
import os

import pytest

from tests.support.llama_backend import LlamaServer, build_llama_server, write_tiny_model

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(
        os.environ.get("HORDE_TEST_LLAMA") != "1",
        reason="set HORDE_TEST_LLAMA=1 to run tests against a real llama-server",
    ),
]

requests = pytest.importorskip("requests")


TIMEOUT = 60

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather for a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}


#: One inference thread: on two cores the Horde, its worker and the test need the other.
LLAMA_THREADS = ("-t", "1")


@pytest.fixture(scope="module")
def llama(tmp_path_factory: pytest.TempPathFactory):
    binary = build_llama_server()
    model = write_tiny_model(tmp_path_factory.mktemp("llama") / "tiny.gguf", seed=0)
    with LlamaServer(binary, model, ctx=4096, parallel=2, extra_args=LLAMA_THREADS) as srv:
        yield srv


@pytest.fixture(scope="module")
def http():
    with requests.Session() as s:
        s.trust_env = False  # never send 127.0.0.1 through an environment proxy
        yield s


def chat(http, srv: LlamaServer, **body) -> dict:
    body.setdefault("messages", [{"role": "user", "content": "Hello there!"}])
    r = http.post(srv.v1_url + "/chat/completions", json=body, timeout=TIMEOUT)
    assert r.status_code == 200, r.text
    return r.json()


def is_printable(text: str) -> bool:
    return all(ch.isprintable() or ch in "\n\t" for ch in text)


def test_props_describe_the_server(llama: LlamaServer) -> None:
    props = llama.props()
    assert props["default_generation_settings"]["n_ctx"] == 2048  # 4096 split over 2 slots
    assert props["total_slots"] == 2
    assert props["modalities"]["vision"] is False
    assert props["chat_template_caps"]["supports_tools"] is True


def test_plain_completion_is_printable(llama: LlamaServer, http) -> None:
    for seed in range(5):
        data = chat(http, llama, max_tokens=32, seed=seed)
        choice = data["choices"][0]
        text = choice["message"]["content"]
        assert isinstance(text, str) and text
        assert is_printable(text), repr(text)
        assert choice["finish_reason"] in ("stop", "length")
        assert 0 < data["usage"]["completion_tokens"] <= 32


def test_streaming_sse_ends_with_done(llama: LlamaServer, http) -> None:
    body = {"messages": [{"role": "user", "content": "Count to ten."}], "max_tokens": 24, "seed": 2, "stream": True}
    # llama-server closes a keep-alive connection after an SSE stream, racing
    # the client's next request on it (RemoteDisconnected): don't reuse it
    with http.post(
        llama.v1_url + "/chat/completions", json=body, stream=True, timeout=TIMEOUT, headers={"Connection": "close"}
    ) as r:
        assert r.status_code == 200, r.text
        assert r.headers["Content-Type"].startswith("text/event-stream")
        payloads = [
            line[len("data: ") :] for line in r.iter_lines(decode_unicode=True) if line and line.startswith("data: ")
        ]
    assert payloads[-1] == "[DONE]"
    chunks = [json.loads(p) for p in payloads[:-1]]
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
    assert text and is_printable(text)
    finishes = [c["choices"][0].get("finish_reason") for c in chunks if c["choices"]]
    assert finishes[-1] in ("stop", "length")


def test_json_schema_response_format(llama: LlamaServer, http) -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"type": "integer"}},
        "required": ["a"],
        "additionalProperties": False,
    }
    for seed in range(5):
        data = chat(
            http,
            llama,
            max_tokens=64,
            seed=seed,
            response_format={"type": "json_schema", "json_schema": {"name": "x", "strict": True, "schema": schema}},
        )
        choice = data["choices"][0]
        assert choice["finish_reason"] == "stop", choice
        obj = json.loads(choice["message"]["content"])
        assert set(obj) == {"a"} and isinstance(obj["a"], int)


@pytest.mark.parametrize("tool_choice", ["required", "auto"])
def test_tools_give_tool_calls(llama: LlamaServer, http, tool_choice: str) -> None:
    # a call is ~50 tokens (the grammar spells the JSON out char by char): leave room
    for seed in range(3):
        data = chat(
            http,
            llama,
            max_tokens=256,
            seed=seed,
            tools=[WEATHER_TOOL],
            tool_choice=tool_choice,
            messages=[{"role": "user", "content": "Weather in Paris?"}],
        )
        choice = data["choices"][0]
        assert choice["finish_reason"] == "tool_calls", choice
        calls = choice["message"]["tool_calls"]
        assert len(calls) == 1, choice
        call = calls[0]
        assert call["type"] == "function" and call["id"]
        assert call["function"]["name"] == "get_weather"
        args = json.loads(call["function"]["arguments"])
        assert isinstance(args, dict) and isinstance(args["city"], str)


def test_tool_result_round_trip_answers_in_text(llama: LlamaServer, http) -> None:
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": [{"type": "text", "text": "Weather in Paris?"}]},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "sunny, 21 C"},
    ]
    data = chat(http, llama, max_tokens=32, seed=4, tools=[WEATHER_TOOL], messages=messages)
    choice = data["choices"][0]
    assert choice["finish_reason"] in ("stop", "length")
    assert not choice["message"].get("tool_calls")
    assert is_printable(choice["message"]["content"] or "")


def test_same_seed_same_output(llama: LlamaServer, http) -> None:
    body = {
        "messages": [{"role": "user", "content": "Tell me a story."}],
        "max_tokens": 32,
        "seed": 1234,
        "temperature": 0.9,
    }
    first = chat(http, llama, **body)["choices"][0]["message"]["content"]
    second = chat(http, llama, **body)["choices"][0]["message"]["content"]
    assert first == second
    other = chat(http, llama, **{**body, "seed": 4321})["choices"][0]["message"]["content"]
    assert other != first  # the seed matters


def test_prompt_over_context_is_a_400(llama: LlamaServer, http) -> None:
    r = http.post(
        llama.v1_url + "/chat/completions",
        timeout=TIMEOUT,
        json={"messages": [{"role": "user", "content": "word " * 3000}], "max_tokens": 8},
    )
    assert r.status_code == 400
    err = r.json()["error"]
    assert err["type"] == "exceed_context_size_error" and err["n_ctx"] == 2048
