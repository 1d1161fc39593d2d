"""Codex CLI (`codex exec`) against the Horde's /v1/responses: a hello, and a round trip through its own
exec_command tool."""

from __future__ import annotations

import pytest

from tests.support.agents.clients import CODEX
from tests.support.agents.scene import (
    LIST_PROMPT,
    Scene,
    assert_served_and_charged_once,
    hello_rules,
    make_scene,
    quotes_the_tool_output,
    tool_rules,
)

KEY_VARIABLE = "HORDE_KEY"


@pytest.fixture(scope="module")
def codex() -> list[str]:
    return CODEX.install()


def codex_env(scene: Scene) -> dict[str, str]:
    """CODEX_HOME/config.toml: the documented custom provider (base URL, the variable holding the key, model), the
    Responses wire API, and no update check, analytics, feedback uploads or plugin sync (which reaches GitHub and
    chatgpt.com at start)."""
    codex_home = scene.home / ".codex"
    codex_home.mkdir()
    (codex_home / "config.toml").write_text(
        f'model = "{scene.model}"\n'
        'model_provider = "horde"\n'
        "check_for_update_on_startup = false\n"
        "[features]\nplugins = false\n"
        "[analytics]\nenabled = false\n"
        "[feedback]\nenabled = false\n"
        "[model_providers.horde]\n"
        'name = "Horde"\n'
        f'base_url = "{scene.horde.url}/v1"\n'
        f'env_key = "{KEY_VARIABLE}"\n'
        'wire_api = "responses"\n'
    )
    return scene.env(CODEX_HOME=str(codex_home), **{KEY_VARIABLE: scene.key})


def test_codex_says_hello_through_the_horde(horde, tmp_path, codex):
    scene = make_scene(horde, tmp_path, hello_rules)
    run = scene.run([*codex, "exec", "--skip-git-repo-check", "Say hello."], codex_env(scene))
    print(run.report())
    assert run.returncode == 0, run.report()
    assert f"{scene.answer}: hello from the Horde's scripted worker." in run.stdout, run.report()
    assert_served_and_charged_once(scene)


def test_codex_runs_its_exec_command_tool_and_answers_from_its_output(horde, tmp_path, codex):
    scene = make_scene(horde, tmp_path, tool_rules({"name": "exec_command", "arguments": {"cmd": "ls"}}))
    run = scene.run([*codex, "exec", "--skip-git-repo-check", LIST_PROMPT], codex_env(scene))
    print(run.report())
    assert run.returncode == 0, run.report()
    assert quotes_the_tool_output(scene, run.stdout), run.report()
    assert_served_and_charged_once(scene, at_least=2)  # the exec_command call, then the answer from its output
