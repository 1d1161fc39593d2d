"""opencode (`opencode run`) against the Horde's /v1/chat/completions through its OpenAI-compatible provider: a
hello, a round trip through its own bash tool, and the clear refusal a model without `limit.output` gets."""

from __future__ import annotations

import json

import pytest

from tests.support.agents.clients import OPENCODE
from tests.support.agents.scene import (
    LIST_PROMPT,
    Scene,
    assert_nothing_queued_or_charged,
    assert_served_and_charged_once,
    hello_rules,
    make_scene,
    quotes_the_tool_output,
    tool_rules,
)

#: The documented output limit: what opencode sends as max_tokens (the chat front takes 16 to 16,384).
MODEL_LIMIT = {"context": 200000, "output": 16384}


@pytest.fixture(scope="module")
def opencode() -> list[str]:
    return OPENCODE.install()


def opencode_env(scene: Scene, model_options: dict) -> dict[str, str]:
    """~/.config/opencode/opencode.json: a custom provider (base URL, key, model and its options), no autoupdate,
    no sharing; the environment switches keep it from fetching models.dev, default plugins or language servers.
    opencode 1.18 still asks the npm registry for @opencode-ai/plugin (for its config folder) and has no switch
    against it: the run's proxy variables refuse that at once."""
    config = {
        "$schema": "https://opencode.ai/config.json",
        "autoupdate": False,
        "share": "disabled",
        "provider": {
            "horde": {
                "npm": "@ai-sdk/openai-compatible",
                "name": "Horde",
                "options": {"baseURL": scene.horde.url + "/v1", "apiKey": scene.key},
                "models": {scene.model: {"name": scene.model, **model_options}},
            }
        },
        "model": f"horde/{scene.model}",
    }
    folder = scene.home / ".config" / "opencode"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "opencode.json").write_text(json.dumps(config))
    return scene.env(
        PWD=str(scene.workdir),  # its tools run in $PWD
        OPENCODE_DISABLE_AUTOUPDATE="1",
        OPENCODE_DISABLE_MODELS_FETCH="1",
        OPENCODE_DISABLE_SHARE="1",
        OPENCODE_DISABLE_LSP_DOWNLOAD="1",
        OPENCODE_DISABLE_DEFAULT_PLUGINS="1",
    )


def test_opencode_says_hello_through_the_horde(horde, tmp_path, opencode):
    scene = make_scene(horde, tmp_path, hello_rules)
    run = scene.run([*opencode, "run", "Say hello."], opencode_env(scene, {"limit": MODEL_LIMIT}))
    print(run.report())
    assert run.returncode == 0, run.report()
    assert f"{scene.answer}: hello from the Horde's scripted worker." in run.stdout, run.report()
    assert_served_and_charged_once(scene)  # the answer, and the session title opencode asks for on the side


def test_opencode_runs_its_bash_tool_and_answers_from_its_output(horde, tmp_path, opencode):
    call = {"name": "bash", "arguments": {"command": "ls", "description": "List the files"}}
    scene = make_scene(horde, tmp_path, tool_rules(call))
    run = scene.run([*opencode, "run", LIST_PROMPT], opencode_env(scene, {"limit": MODEL_LIMIT}))
    print(run.report())
    assert run.returncode == 0, run.report()
    assert quotes_the_tool_output(scene, run.stdout), run.report()
    assert_served_and_charged_once(scene, at_least=2)  # the bash call, then the answer from its output


def test_opencode_without_an_output_limit_is_refused_with_the_limit_it_must_set(horde, tmp_path, opencode):
    """Without `limit.output` opencode asks for 32,000 tokens on chat completions, whose contract is 16 to 16,384:
    the refusal names max_tokens and the ceiling, and nothing is queued or charged (docs/how-to says to set it)."""
    scene = make_scene(horde, tmp_path, hello_rules)
    run = scene.run([*opencode, "run", "Say hello."], opencode_env(scene, {"tool_call": True}))
    print(run.report())
    assert run.returncode != 0, run.report()
    assert "max_tokens" in run.stdout + run.stderr and "16384" in run.stdout + run.stderr, run.report()
    assert_nothing_queued_or_charged(scene)
