"""Qwen Code (`qwen -p`) against the Horde's /v1/chat/completions: a hello, and a round trip through its own
list_directory tool (its shell tool is left out of non-interactive runs)."""

from __future__ import annotations

import json

import pytest

from tests.support.agents.clients import QWEN_CODE
from tests.support.agents.scene import (
    LIST_PROMPT,
    Scene,
    assert_served_and_charged_once,
    hello_rules,
    make_scene,
    quotes_the_tool_output,
    tool_rules,
)


@pytest.fixture(scope="module")
def qwen() -> list[str]:
    return QWEN_CODE.install()


def qwen_env(scene: Scene) -> dict[str, str]:
    """The documented OPENAI_* variables, and ~/.qwen/settings.json with usage statistics, telemetry and update
    checks off. Qwen Code sends everything through a proxy variable when one is set, the Horde's loopback address
    too, so its environment has none."""
    folder = scene.home / ".qwen"
    folder.mkdir()
    settings = {
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
        "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
    }
    (folder / "settings.json").write_text(json.dumps(settings))
    return scene.env(
        proxy_guard=False, OPENAI_BASE_URL=scene.horde.url + "/v1", OPENAI_API_KEY=scene.key, OPENAI_MODEL=scene.model
    )


def test_qwen_code_says_hello_through_the_horde(horde, tmp_path, qwen):
    scene = make_scene(horde, tmp_path, hello_rules)
    run = scene.run([*qwen, "-p", "Say hello.", "--auth-type", "openai"], qwen_env(scene))
    print(run.report())
    assert run.returncode == 0, run.report()
    assert f"{scene.answer}: hello from the Horde's scripted worker." in run.stdout, run.report()
    assert_served_and_charged_once(scene)


def test_qwen_code_runs_its_list_directory_tool_and_answers_from_its_output(horde, tmp_path, qwen):
    scene = make_scene(
        horde, tmp_path, tool_rules(lambda scene: {"name": "list_directory", "arguments": {"path": str(scene.workdir)}})
    )
    run = scene.run([*qwen, "-p", LIST_PROMPT, "--auth-type", "openai"], qwen_env(scene))
    print(run.report())
    assert run.returncode == 0, run.report()
    assert quotes_the_tool_output(scene, run.stdout), run.report()
    assert_served_and_charged_once(scene, at_least=2)  # the list_directory call, then the answer from its output
