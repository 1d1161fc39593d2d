"""The reference worker keeps a conversation's prompt warm on llama.cpp: `cache_prompt`, the conversation's own free
slot (horde/bridge/backends/slots.py), and the cached prompt tokens the server reports, as the submit's
`usage.cached_tokens`."""

from __future__ import annotations

import json
import threading

import pytest

from horde.bridge.backends.openai_compat import OpenAICompatBackend, cached_usage
from horde.bridge.backends.openai_http import BackendHTTP
from horde.bridge.backends.slots import SlotChooser
from horde.bridge.backends.sse import ChatStreamAccumulator
from horde.bridge.context import JobContext
from horde.bridge.job import Job
from tests.support.fake_openai import MODEL_ID, FakeOpenAI


class _Silent:
    def progress(self, job_id, content, reasoning_content):
        return False


def _job(conversation: str | None = None) -> Job:
    payload: dict = {"messages": [{"role": "user", "content": "hi"}]}
    if conversation:
        payload["conversation_key"] = conversation
    return Job(id="job-1", model=MODEL_ID, ttl_s=60, payload=payload)


@pytest.fixture
def server():
    fake = FakeOpenAI(kind="llamacpp").start()
    yield fake
    fake.stop()


def test_a_llama_backend_asks_for_the_cache_and_the_conversations_slot(server):
    backend = OpenAICompatBackend(BackendHTTP(server.url), [MODEL_ID], llama_slots=2)
    for _ in range(2):
        backend.generate(_job("conversation-a"), JobContext(_job(), _Silent(), progress_enabled=False))
    backend.generate(_job("conversation-b"), JobContext(_job(), _Silent(), progress_enabled=False))
    sent = server.requests
    assert all(body["cache_prompt"] is True for body in sent)
    assert sent[0]["id_slot"] == sent[1]["id_slot"] != sent[2]["id_slot"]
    assert "conversation_key" not in json.dumps(sent)  # the Horde's key stays with the worker


def test_other_servers_get_neither(server):
    backend = OpenAICompatBackend(BackendHTTP(server.url), [MODEL_ID])
    backend.generate(_job("conversation-a"), JobContext(_job(), _Silent(), progress_enabled=False))
    assert "cache_prompt" not in server.requests[0] and "id_slot" not in server.requests[0]


def test_a_conversation_keeps_its_slot_while_it_is_free_and_takes_the_least_recent_otherwise():
    chooser = SlotChooser(2)
    with chooser.slot_for("a") as a:
        pass
    with chooser.slot_for("b") as b:
        assert b != a  # the least recently used slot, not a's
    with chooser.slot_for("a") as again, chooser.slot_for("a") as busy:
        assert again == a and busy == b  # a's slot is busy: the other one, which b loses
    with chooser.slot_for("b") as b_again:
        assert b_again == a  # b's slot was overwritten by a: it takes the least recent
    with chooser.slot_for(None) as first, chooser.slot_for(None) as second, chooser.slot_for("c") as none_left:
        assert {first, second} == {0, 1} and none_left is None  # every slot busy: the server chooses


def test_the_chooser_is_shared_by_the_workers_threads():
    chooser, held, errors = SlotChooser(4), set(), []
    lock = threading.Lock()

    def run(index: int):
        for _ in range(200):
            with chooser.slot_for(f"c{index % 6}") as slot:
                if slot is None:
                    continue
                with lock:
                    if slot in held:
                        errors.append(slot)
                    held.add(slot)
                with lock:
                    held.discard(slot)

    threads = [threading.Thread(target=run, args=(index,)) for index in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []  # never one slot to two jobs at once


@pytest.mark.parametrize(
    ("usage", "timings", "expected"),
    [
        ({"prompt_tokens": 9, "prompt_tokens_details": {"cached_tokens": 7}}, None, {"cached_tokens": 7}),
        ({"prompt_tokens": 9}, {"prompt_n": 2, "cache_n": 7}, {"cached_tokens": 7}),
        ({"prompt_tokens_details": {"cached_tokens": 5}}, {"cache_n": 7}, {"cached_tokens": 5}),
        ({"prompt_tokens": 9}, None, {}),
        (None, {"cache_n": -1}, {}),
        ({"prompt_tokens_details": {"cached_tokens": True}}, None, {}),
    ],
)
def test_the_cached_tokens_come_from_openais_usage_or_llamas_timings(usage, timings, expected):
    assert cached_usage(usage, timings) == expected


def test_the_stream_keeps_llamas_timings():
    acc = ChatStreamAccumulator()
    acc.feed(
        {"choices": [{"index": 0, "delta": {"content": "hi"}, "finish_reason": "stop"}], "timings": {"cache_n": 3}}
    )
    acc.feed({"choices": [], "usage": {"prompt_tokens": 4, "completion_tokens": 1}})
    assert acc.timings == {"cache_n": 3} and acc.usage["prompt_tokens"] == 4
