"""Claude Code (`claude -p`) against the Horde's /v1/messages: a hello, and a round trip through its own Bash tool."""

from __future__ import annotations

import pytest

from tests.support.agents.clients import CLAUDE_CODE
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
def claude() -> list[str]:
    return CLAUDE_CODE.install()


def claude_env(scene: Scene) -> dict[str, str]:
    """The documented settings (base URL without /v1, key, model) and its switches against phoning home."""
    return scene.env(
        ANTHROPIC_BASE_URL=scene.horde.url,
        ANTHROPIC_API_KEY=scene.key,
        ANTHROPIC_SMALL_FAST_MODEL=scene.model,
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        DISABLE_TELEMETRY="1",
        DISABLE_ERROR_REPORTING="1",
        DISABLE_AUTOUPDATER="1",
    )


def test_claude_code_says_hello_through_the_horde(horde, tmp_path, claude):
    scene = make_scene(horde, tmp_path, hello_rules)
    run = scene.run([*claude, "-p", "Say hello.", "--model", scene.model], claude_env(scene))
    print(run.report())
    assert run.returncode == 0, run.report()
    assert f"{scene.answer}: hello from the Horde's scripted worker." in run.stdout, run.report()
    assert_served_and_charged_once(scene)


def test_claude_code_runs_its_bash_tool_and_answers_from_its_output(horde, tmp_path, claude):
    call = {"name": "Bash", "arguments": {"command": "ls", "description": "List the files"}}
    scene = make_scene(horde, tmp_path, tool_rules(call))
    run = scene.run([*claude, "-p", LIST_PROMPT, "--model", scene.model, "--allowedTools", "Bash"], claude_env(scene))
    print(run.report())
    assert run.returncode == 0, run.report()
    assert quotes_the_tool_output(scene, run.stdout), run.report()
    assert_served_and_charged_once(scene, at_least=2)  # the Bash call, then the answer from its output
