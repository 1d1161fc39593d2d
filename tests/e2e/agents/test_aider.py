"""aider (`aider --message`) against the Horde's /v1/chat/completions through LiteLLM: a hello."""

from __future__ import annotations

import json

import pytest

from tests.support.agents.clients import AIDER
from tests.support.agents.scene import Scene, assert_served_and_charged_once, hello_rules, make_scene


@pytest.fixture(scope="module")
def aider() -> list[str]:
    return AIDER.install()


def aider_env(scene: Scene) -> dict[str, str]:
    """~/.aider.model.metadata.json describes the model (its context and output sizes), so aider does not fetch
    LiteLLM's model list from the network to learn them."""
    metadata = {
        f"openai/{scene.model}": {
            "max_input_tokens": 200000,
            "max_output_tokens": 16384,
            "input_cost_per_token": 0,
            "output_cost_per_token": 0,
            "litellm_provider": "openai",
            "mode": "chat",
        }
    }
    (scene.home / ".aider.model.metadata.json").write_text(json.dumps(metadata))
    return scene.env(LITELLM_LOCAL_MODEL_COST_MAP="True")


def test_aider_says_hello_through_the_horde(horde, tmp_path, aider):
    scene = make_scene(horde, tmp_path, hello_rules)
    argv = [
        *aider,
        *("--model", f"openai/{scene.model}", "--openai-api-base", scene.horde.url + "/v1"),
        *("--openai-api-key", scene.key, "--no-git", "--yes-always", "--no-check-update", "--analytics-disable"),
        *("--message", "Say hello."),
    ]
    run = scene.run(argv, aider_env(scene))
    print(run.report())
    assert run.returncode == 0, run.report()
    assert f"{scene.answer}: hello from the Horde's scripted worker." in run.stdout, run.report()
    assert_served_and_charged_once(scene)
