"""A real llama-server behind the reference worker keeps a conversation's prompt in its cache: the second turn
reports the tokens it read from cache, through the Horde, to the OpenAI SDK (usage.prompt_tokens_details).

Opt-in on a user's machine (HORDE_TEST_LLAMA=1), as tests/e2e/test_llama_horde.py."""

from __future__ import annotations

import os
import uuid

import pytest

from tests.support.harness import unique_model

pytestmark = pytest.mark.skipif(
    os.environ.get("HORDE_TEST_LLAMA") != "1", reason="set HORDE_TEST_LLAMA=1 to run against a real llama-server"
)

SYSTEM = "You answer questions about the AI Horde, a crowd of volunteer workers. " * 12


@pytest.fixture
def served(horde, llama):
    model = unique_model("llama")
    horde.worker([model], "--backend", "openai", "--backend-url", llama.url, "--max-length", "64")
    return model


@pytest.mark.parametrize("stream", [False, True])
def test_the_second_turn_reads_the_first_turns_prompt_from_the_cache(horde, served, stream):
    client = horde.openai(horde.user())
    fresh = f"[{uuid.uuid4().hex}] "  # no test reads a prefix another one left in the server's cache
    messages = [{"role": "system", "content": fresh + SYSTEM}, {"role": "user", "content": "What is a worker?"}]

    def turn():
        if not stream:
            answer = client.chat.completions.create(model=served, messages=messages, max_tokens=16, temperature=0)
            return answer.choices[0].message.content, answer.usage
        chunks = list(
            client.chat.completions.create(
                model=served,
                messages=messages,
                max_tokens=16,
                temperature=0,
                stream=True,
                stream_options={"include_usage": True},
            )
        )
        text = "".join(chunk.choices[0].delta.content or "" for chunk in chunks if chunk.choices)
        return text, next(chunk.usage for chunk in chunks if chunk.usage is not None)

    reply, first = turn()
    messages += [{"role": "assistant", "content": reply}, {"role": "user", "content": "And a slot?"}]
    _, second = turn()
    assert first.prompt_tokens_details.cached_tokens < first.prompt_tokens / 2  # a fresh prompt
    assert second.prompt_tokens_details.cached_tokens >= first.prompt_tokens * 0.9  # the whole first turn, cached
    assert second.prompt_tokens_details.cached_tokens <= second.prompt_tokens
