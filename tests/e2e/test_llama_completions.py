"""/v1/completions on a real model: OpenAI SDK → /v1/completions → Horde → reference worker → llama-server's
/v1/completions → back. Opt-in (HORDE_TEST_LLAMA=1), as tests/e2e/test_llama_horde.py."""

import os

import pytest

from tests.support.harness import unique_model
from tests.support.openapi import validate

pytestmark = pytest.mark.skipif(
    os.environ.get("HORDE_TEST_LLAMA") != "1", reason="set HORDE_TEST_LLAMA=1 to run against a real llama-server"
)


@pytest.fixture
def text_served(horde, llama):
    model = unique_model("llama-text")
    horde.worker([model], "--backend", "openai", "--backend-url", llama.url, "--max-length", "256", "--kinds", "text")
    return model


def test_completion_through_llama(horde, text_served):
    raw = horde.openai().completions.with_raw_response.create(
        model=text_served, prompt="Once upon a time", max_tokens=32, temperature=0.7, seed=3
    )
    validate(raw.http_response.json(), "CreateCompletionResponse")
    completion = raw.parse()
    assert isinstance(completion.choices[0].text, str) and completion.choices[0].finish_reason in ("stop", "length")
    assert completion.usage.completion_tokens > 0 and completion.model == text_served


def test_stream_with_two_choices_through_llama(horde, text_served):
    events = list(
        horde.openai().completions.create(
            model=text_served, prompt="The sea", max_tokens=24, n=2, stream=True, stream_options={"include_usage": True}
        )
    )
    finishes = {
        choice.index: choice.finish_reason for event in events for choice in event.choices if choice.finish_reason
    }
    assert set(finishes) == {0, 1} and events[-1].usage.completion_tokens > 0


def test_stop_sequence_cuts_the_greedy_text(horde, text_served):
    client = horde.openai()
    body = {"model": text_served, "prompt": "Hello", "max_tokens": 48, "temperature": 0, "seed": 1}
    full = client.completions.create(**body).choices[0].text
    if len(full.strip()) < 8:
        pytest.skip(f"the tiny model's greedy text is too short to cut: {full!r}")
    stop = full[4:7]
    cut = client.completions.create(**body, stop=[stop]).choices[0]
    assert (cut.text, cut.finish_reason) == (full[: full.index(stop)], "stop")
