"""Conversation affinity for real: the cached prompt tokens a worker reports reach the clients of every dialect
through their SDKs, and a conversation's turns stay on one worker across two server processes on PostgreSQL with
Redis between them (horde/chat/affinity.py, docs/decisions/0029-conversation-affinity.md)."""

from __future__ import annotations

import concurrent.futures
import time
import uuid

import pytest
import requests

from tests.support.harness import postgres_servers, unique_model, write_rules
from tests.support.processes import wait_until

anthropic = pytest.importorskip("anthropic")

PROMPT_TOKENS, CACHED_TOKENS = 40, 30
SYSTEM = "You are a terse assistant. " * 20


@pytest.fixture
def cache_reporting_worker(horde, tmp_path):
    """A scripted worker whose backend says it read 30 of the prompt's 40 tokens from its cache."""
    model = unique_model("affinity")
    rules = write_rules(
        tmp_path,
        [
            {
                "match": {"contains": "overclaim"},
                "reply": {"content": "ok", "usage": {"prompt_tokens": 5, "cached_tokens": 99}},
            },
            {
                "match": {},
                "reply": {
                    "content": "Cached.",
                    "usage": {"prompt_tokens": PROMPT_TOKENS, "cached_tokens": CACHED_TOKENS},
                },
            },
        ],
    )
    horde.worker([model], rules=rules)
    return model


def _messages(text: str = "Hello") -> list[dict]:
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": text}]


def test_chat_completions_report_the_cached_tokens_as_json_and_streamed(horde, cache_reporting_worker):
    client = horde.openai(horde.user())
    answer = client.chat.completions.create(model=cache_reporting_worker, messages=_messages(), prompt_cache_key="c1")
    assert answer.usage.prompt_tokens == PROMPT_TOKENS
    assert answer.usage.prompt_tokens_details.cached_tokens == CACHED_TOKENS
    chunks = list(
        client.chat.completions.create(
            model=cache_reporting_worker, messages=_messages(), stream=True, stream_options={"include_usage": True}
        )
    )
    usage = [chunk.usage for chunk in chunks if chunk.usage is not None]
    assert len(usage) == 1 and usage[0].prompt_tokens_details.cached_tokens == CACHED_TOKENS


def test_a_report_above_the_prompt_is_capped_at_the_prompt(horde, cache_reporting_worker):
    client = horde.openai(horde.user())
    answer = client.chat.completions.create(model=cache_reporting_worker, messages=_messages("overclaim"))
    assert answer.usage.prompt_tokens == 5 and answer.usage.prompt_tokens_details.cached_tokens == 5


def test_responses_report_the_cached_tokens(horde, cache_reporting_worker):
    client = horde.openai(horde.user())
    response = client.responses.create(
        model=cache_reporting_worker, instructions=SYSTEM, input="Hello", prompt_cache_key="r1"
    )
    assert response.usage.input_tokens == PROMPT_TOKENS
    assert response.usage.input_tokens_details.cached_tokens == CACHED_TOKENS
    follow_up = client.responses.create(model=cache_reporting_worker, input="More", previous_response_id=response.id)
    assert follow_up.usage.input_tokens_details.cached_tokens == CACHED_TOKENS


def test_messages_report_cache_reads_as_json_and_streamed(horde, cache_reporting_worker):
    client = anthropic.Anthropic(base_url=horde.url, api_key=horde.user(), max_retries=0)
    claude_code_user = '{"device_id": "d", "account_uuid": "a", "session_id": "' + str(uuid.uuid4()) + '"}'
    message = client.messages.create(
        model=cache_reporting_worker,
        max_tokens=64,
        system=SYSTEM,
        messages=[{"role": "user", "content": "Hello"}],
        metadata={"user_id": claude_code_user},
    )
    assert message.usage.cache_read_input_tokens == CACHED_TOKENS
    assert message.usage.input_tokens == PROMPT_TOKENS - CACHED_TOKENS  # Anthropic's input_tokens exclude reads
    with client.messages.stream(
        model=cache_reporting_worker, max_tokens=64, system=SYSTEM, messages=[{"role": "user", "content": "Hi"}]
    ) as stream:
        final = stream.get_final_message()
    assert final.usage.cache_read_input_tokens == CACHED_TOKENS


def test_the_metrics_count_prompt_and_cached_tokens(horde, cache_reporting_worker):
    def counted(name: str) -> float:
        text = requests.get(horde.url + "/metrics", timeout=10).text
        lines = [line for line in text.splitlines() if line.startswith(name + '{kind="chat"}')]
        return float(lines[0].split()[-1]) if lines else 0.0

    before = counted("horde_cached_prompt_tokens_total"), counted("horde_prompt_tokens_total")
    horde.openai(horde.user()).chat.completions.create(model=cache_reporting_worker, messages=_messages())
    after = counted("horde_cached_prompt_tokens_total"), counted("horde_prompt_tokens_total")
    assert after[0] - before[0] == CACHED_TOKENS and after[1] - before[1] == PROMPT_TOKENS


def _open_long_polls(url: str) -> float:
    text = requests.get(url + "/metrics", timeout=10).text
    return sum(float(line.split()[-1]) for line in text.splitlines() if line.startswith("horde_open_long_polls"))


def _converse(client, model: str, key: str, turns: int) -> tuple[list[str], list[float]]:
    """One conversation of `turns` turns, each resending the history: the worker of each turn and its time."""
    messages = _messages(f"Conversation {key}")
    workers, times = [], []
    for _ in range(turns):
        started = time.monotonic()
        answer = client.chat.completions.create(model=model, messages=messages, prompt_cache_key=key)
        times.append(time.monotonic() - started)
        workers.append(answer.model_extra["x_horde"]["worker_id"])
        messages += [
            {"role": "assistant", "content": answer.choices[0].message.content},
            {"role": "user", "content": "Go on"},
        ]
    return workers, times


def test_a_conversation_stays_on_its_worker_across_two_server_processes(tmp_path):
    """Each conversation's turns alternate between the two servers; the workers long-poll one server each. The
    reservation is read from the database by either server, and its announcement crosses through Redis: a turn
    reserved for a worker polling the other server is taken at once, not at its long-poll's recheck."""
    rules = write_rules(tmp_path, [{"match": {}, "reply": {"content": "Noted.", "delay_s": 0.05}}])
    with postgres_servers({"HORDE_AFFINITY_WAIT_MS": 60_000}) as horde:
        model = unique_model("affinity")
        key = horde.user(kudos=1000)
        for server in horde.servers:
            horde.worker([model], "--threads", "2", rules=rules, server=server)
        clients = [horde.openai(key, server=server) for server in horde.servers]

        def conversation(index: int) -> tuple[list[str], list[float]]:
            return _converse(clients[index % 2], model, f"conversation-{index}-{uuid.uuid4().hex[:6]}", 5)

        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            results = list(pool.map(conversation, range(4)))
        for workers, times in results:
            assert len(set(workers)) == 1, workers  # every turn on the worker of the first
            assert max(times[1:]) < 3.0, times  # woken at once (a long-poll rechecks every 5 s)


def test_a_turn_goes_to_another_worker_when_its_worker_is_gone(tmp_path):
    rules = write_rules(tmp_path, [{"match": {}, "reply": {"content": "Noted."}}])
    with postgres_servers({"HORDE_AFFINITY_WAIT_MS": 1000}) as horde:
        model = unique_model("affinity")
        key = horde.user(kudos=1000)
        first = horde.worker([model], rules=rules, server=horde.servers[0])
        client = horde.openai(key, server=horde.servers[1])
        answer = client.chat.completions.create(model=model, messages=_messages(), prompt_cache_key="gone")
        assert answer.model_extra["x_horde"]["worker_name"] == first.worker_name
        first.stop()  # still online for the Horde (it popped within the online window) but gone
        # Its last long-poll lingers on the server until its wait ends: a job it claimed would wait for the job's ttl.
        wait_until(lambda: _open_long_polls(horde.servers[0].url) == 0, what="the stopped worker's long-poll to end")
        second = horde.worker([model], rules=rules, server=horde.servers[1])
        started = time.monotonic()
        answer = client.chat.completions.create(model=model, messages=_messages(), prompt_cache_key="gone")
        waited = time.monotonic() - started
        assert answer.model_extra["x_horde"]["worker_name"] == second.worker_name
        assert 1.0 <= waited < 4.0, waited  # the reservation's wait, then the announcement through Redis
