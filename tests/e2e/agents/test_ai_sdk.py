"""The AI SDK (`ai` 6) against the Horde with each of its providers: OpenAI (Responses, and `.chat` for chat
completions), Anthropic (Messages) and OpenAI-compatible (chat completions); generateText, streamText, and a tool
loop (stopWhen) whose tool lists the working directory. js/ai_sdk.mjs makes the call and prints it as JSON."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.support.agents.clients import AI_SDK_PINS, ai_sdk_node_modules
from tests.support.agents.run import ClientRun
from tests.support.agents.scene import (
    LIST_PROMPT,
    Scene,
    assert_served_and_charged_once,
    hello_rules,
    make_scene,
    tool_rules,
)

SCRIPT = AI_SDK_PINS / "ai_sdk.mjs"
PROVIDERS = ("openai", "openai-chat", "anthropic", "openai-compatible")
STREAM_PROMPT = "Stream a short greeting."
STREAM_STEPS = 4


@pytest.fixture(scope="module")
def node_modules() -> Path:
    return ai_sdk_node_modules()


def model_prefix(provider: str) -> str:
    """The Anthropic provider asks for its known maximum, 64,000 tokens, for a model named like Claude Sonnet 4.5
    (4,096 for a name it does not know): its test serves such a name."""
    return "agents/claude-sonnet-4-5" if provider == "anthropic" else "agents"


def stream_rules(scene: Scene) -> list[dict]:
    steps = {"progress_steps": STREAM_STEPS, "progress_interval_s": 0.3}
    content = f"{scene.answer}: a greeting that arrives in parts."
    return [{"match": {"contains": STREAM_PROMPT}, "reply": {"content": content, **steps}}, *hello_rules(scene)]


def run_script(scene: Scene, tmp_path: Path, node_modules: Path, provider: str, mode: str, prompt: str) -> dict:
    """Run js/ai_sdk.mjs from a folder beside the pinned node_modules, and read the JSON line it prints."""
    folder = tmp_path / "js"
    folder.mkdir()
    shutil.copy(SCRIPT, folder / SCRIPT.name)
    (folder / "node_modules").symlink_to(node_modules)
    options = {
        "provider": provider,
        "mode": mode,
        "baseURL": scene.horde.url + "/v1",
        "apiKey": scene.key,
        "model": scene.model,
        "prompt": prompt,
        "directory": str(scene.workdir),
    }
    run = scene.run(["node", str(folder / SCRIPT.name), json.dumps(options)], scene.env())
    print(run.report())
    return read_result(run)


def read_result(run: ClientRun) -> dict:
    lines = [line for line in run.stdout.splitlines() if line.startswith("{")]
    assert run.returncode == 0 and lines, run.report()
    result = json.loads(lines[-1])
    assert result["ok"], run.report()
    return result


@pytest.mark.parametrize("provider", PROVIDERS)
def test_generate_text(horde, tmp_path, node_modules, provider):
    scene = make_scene(horde, tmp_path, hello_rules, model_prefix(provider))
    result = run_script(scene, tmp_path, node_modules, provider, "text", "Say hello.")
    assert result["text"] == f"{scene.answer}: hello from the Horde's scripted worker."
    assert result["finishReason"] == "stop"
    assert_served_and_charged_once(scene)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_stream_text(horde, tmp_path, node_modules, provider):
    scene = make_scene(horde, tmp_path, stream_rules, model_prefix(provider))
    result = run_script(scene, tmp_path, node_modules, provider, "stream", STREAM_PROMPT)
    assert result["text"] == f"{scene.answer}: a greeting that arrives in parts."
    assert result["chunks"] > 1, "the worker's progress reached the client as several deltas"
    assert result["finishReason"] == "stop"
    assert_served_and_charged_once(scene)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_tool_loop_calls_the_tool_and_answers_from_its_result(horde, tmp_path, node_modules, provider):
    scene = make_scene(horde, tmp_path, tool_rules({"name": "list_files", "arguments": {}}), model_prefix(provider))
    result = run_script(scene, tmp_path, node_modules, provider, "tools", LIST_PROMPT)
    assert [step["toolCalls"] for step in result["steps"]] == [["list_files"], []]
    assert result["text"].startswith(f"{scene.answer}: the tool said") and scene.marker in result["text"]
    assert result["finishReason"] == "stop"
    assert_served_and_charged_once(scene, at_least=2)
