"""Simon Willison's llm (`llm -m MODEL`) against the Horde's /v1/chat/completions: a hello."""

from __future__ import annotations

import json

import pytest

from tests.support.agents.clients import LLM
from tests.support.agents.scene import Scene, assert_served_and_charged_once, hello_rules, make_scene

MODEL_ID = "horde"


@pytest.fixture(scope="module")
def llm() -> list[str]:
    return LLM.install()


def llm_env(scene: Scene) -> dict[str, str]:
    """LLM_USER_PATH holds extra-openai-models.yaml (the documented way to add an OpenAI-compatible model: its id,
    the served model's name, the base URL, the name of its key) and keys.json with that key."""
    folder = scene.home / "llm"
    folder.mkdir()
    (folder / "extra-openai-models.yaml").write_text(
        f"- model_id: {MODEL_ID}\n"
        f"  model_name: {scene.model}\n"
        f"  api_base: {scene.horde.url}/v1\n"
        f"  api_key_name: {MODEL_ID}\n"
    )
    (folder / "keys.json").write_text(json.dumps({MODEL_ID: scene.key}))
    return scene.env(LLM_USER_PATH=str(folder))


def test_llm_says_hello_through_the_horde(horde, tmp_path, llm):
    scene = make_scene(horde, tmp_path, hello_rules)
    run = scene.run([*llm, "-m", MODEL_ID, "Say hello."], llm_env(scene))
    print(run.report())
    assert run.returncode == 0, run.report()
    assert f"{scene.answer}: hello from the Horde's scripted worker." in run.stdout, run.report()
    assert_served_and_charged_once(scene)
