"""The OpenAI backend's start-up probe: each declaration only when a real request shows it."""

import pytest

from horde.bridge.backends.openai_http import BackendHTTP, server_root
from horde.bridge.backends.probe import detect_server
from horde.bridge.backends.probe_checks import probe_server
from horde.bridge.cli import build_parser, openai_worker
from tests.support.fake_openai import MODEL_ID, FakeOpenAI

ALL_TEXT_FEATURES = [
    "tools",
    "json_object",
    "json_schema",
    "tools_with_response_format",
    "seed",
    "frequency_penalty",
    "presence_penalty",
    "progress",
]


@pytest.fixture
def server(request):
    fake = FakeOpenAI(**getattr(request, "param", {})).start()
    yield fake
    fake.stop()


def probe(fake):
    http = BackendHTTP(fake.url + "/v1/")
    info = detect_server(http)
    return info, probe_server(http, info)


def test_server_root_accepts_root_or_v1():
    assert server_root("http://h:8080/v1/") == "http://h:8080"
    assert server_root("http://h:8080") == "http://h:8080"


@pytest.mark.parametrize("server", [{"kind": "llamacpp", "honors_forced": True}], indirect=True)
def test_llamacpp_declares_what_it_does_but_never_tool_choice(server):
    info, result = probe(server)
    assert info.kind == "llama.cpp" and info.context_tokens == 2048 and info.slots == 2
    assert info.model_ids == [MODEL_ID]
    assert result.features == ALL_TEXT_FEATURES
    assert result.guarantees == ["schema_adherence", "prompt_fit"]
    assert "llama.cpp does not enforce" in result.reasons["tool_choice"]
    assert result.streaming and result.stream_usage


@pytest.mark.parametrize("server", [{"kind": "vllm", "honors_forced": True}], indirect=True)
def test_a_server_that_honours_forced_functions_gets_tool_choice(server):
    info, result = probe(server)
    assert info.kind.startswith("vllm") and info.context_tokens == 2048
    assert result.guarantees == ["tool_choice", "schema_adherence", "prompt_fit"]
    forced = [r for r in server.requests if isinstance(r.get("tool_choice"), dict)]
    assert len(forced) == 3 and forced[0]["tool_choice"]["function"]["name"] == "get_date"


@pytest.mark.parametrize("server", [{"kind": "vllm", "honors_forced": False}], indirect=True)
def test_required_alone_is_not_the_tool_choice_guarantee(server):
    _info, result = probe(server)
    assert "tools" in result.features and "tool_choice" not in result.guarantees
    assert "forced second function was honoured 0" in result.reasons["tool_choice"]


@pytest.mark.parametrize("server", [{"kind": "koboldcpp", "refuses_long": False, "vision": True}], indirect=True)
def test_koboldcpp_has_no_native_tools_nor_frequency_penalty(server):
    info, result = probe(server)
    assert info.kind.startswith("koboldcpp") and info.context_tokens == 2048
    assert "tools" not in result.features and "tools_with_response_format" not in result.features
    assert "frequency_penalty" not in result.features and "presence_penalty" in result.features
    assert "vision" in result.features
    assert result.guarantees == ["schema_adherence"]  # it trims long prompts: no prompt_fit
    assert not any(r.get("tools") for r in server.requests)


@pytest.mark.parametrize(
    "server", [{"json_ok": False, "seed_deterministic": False, "supports_tools": False}], indirect=True
)
def test_ignored_formats_seeds_and_template_without_tools_are_not_declared(server):
    _info, result = probe(server)
    for name in ("json_schema", "json_object", "tools", "tools_with_response_format", "seed"):
        assert name not in result.features, name
    assert result.guarantees == ["prompt_fit"]
    assert "chat template does not support tools" in result.reasons["tools"]


@pytest.mark.parametrize("server", [{"kind": "generic"}], indirect=True)
def test_unknown_context_means_no_prompt_fit(server):
    info, result = probe(server)
    assert info.kind == "openai-compatible" and info.context_tokens is None
    assert "prompt_fit" not in result.guarantees


def test_a_refused_stream_means_no_progress(server):
    server.fail_next = [(400, {"error": {"message": "streaming off"}})] * 2
    _info, result = probe(server)
    assert "progress" not in result.features and not result.streaming
    assert "streaming off" in result.reasons["progress"]


@pytest.mark.parametrize("server", [{"kind": "llamacpp", "ctx": 3000, "slots": 4}], indirect=True)
def test_openai_declarations_narrow_and_cap(server):
    parse = build_parser().parse_args
    backend, declared = openai_worker(parse(["--name", "w", "--backend", "openai", "--backend-url", server.url]))
    assert declared.models == [MODEL_ID] and declared.threads == 4
    assert declared.max_context_length == 3000 and declared.max_length == 3000
    assert declared.features == ALL_TEXT_FEATURES
    assert backend.streaming
    _backend, declared = openai_worker(
        parse(
            [
                "--name",
                "w",
                "--backend",
                "openai",
                "--backend-url",
                server.url + "/v1",
                "--model",
                "brand/tiny",
                "--max-context-length",
                "2048",
                "--max-length",
                "99999",
                "--threads",
                "1",
                "--features",
                "tools,progress,vision",
                "--guarantees",
                "tool_choice,prompt_fit",
            ]
        )
    )
    assert declared.models == ["brand/tiny"] and declared.threads == 1
    assert declared.max_context_length == 2048 and declared.max_length == 2048
    assert declared.features == ["tools", "progress"]  # vision was not probed, so it cannot be added
    assert declared.guarantees == ["prompt_fit"]


@pytest.mark.parametrize(
    "server", [{"kind": "ollama", "ctx": 6144, "refuses_long": False, "honors_forced": True}], indirect=True
)
def test_ollama_capabilities_and_window(server):
    info, result = probe(server)
    assert info.kind == "ollama 0.12.0" and info.context_tokens == 6144  # num_ctx, not the trained 8192
    assert "tools" in result.features and "reasoning_effort" in result.features
    assert "vision" not in result.features
    assert result.guarantees == ["tool_choice", "schema_adherence"]  # Ollama trims: no prompt_fit
    assert any(r.get("reasoning_effort") == "low" for r in server.requests)
