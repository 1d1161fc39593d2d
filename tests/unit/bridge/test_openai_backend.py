"""The OpenAI backend generating jobs: forwarding, streaming progress, cancel, retries and faults."""

import time

import pytest

from horde.bridge.backends import openai_compat
from horde.bridge.backends.openai_compat import OpenAICompatBackend
from horde.bridge.backends.openai_http import BackendHTTP
from horde.bridge.cli import main
from horde.bridge.context import JobContext
from horde.bridge.job import Job, JobCancelled, JobFault
from tests.support.fake_horde import WORKER_KEY, FakeHorde
from tests.support.fake_openai import MODEL_ID, FakeOpenAI

TOOL = {"type": "function", "function": {"name": "lookup", "parameters": {"type": "object", "properties": {}}}}


@pytest.fixture
def server():
    fake = FakeOpenAI(kind="llamacpp").start()
    yield fake
    fake.stop()


@pytest.fixture(autouse=True)
def quick_retries(monkeypatch):
    monkeypatch.setattr(openai_compat, "BACKEND_RETRY_DELAY_S", 0.01)


class StubClient:
    def __init__(self, cancel_after=None):
        self.posts, self.cancel_after = [], cancel_after

    def progress(self, job_id, content, reasoning_content):
        self.posts.append((content, reasoning_content))
        return self.cancel_after is not None and len(self.posts) >= self.cancel_after


def make_job(model="brand/tiny", **payload):
    payload.setdefault("messages", [{"role": "user", "content": "hi"}])
    return Job(id="job-1", model=model, ttl_s=60, payload=payload)


def generate(server, job, client=None, interval_s=0.0):
    backend = OpenAICompatBackend(BackendHTTP(server.url), [MODEL_ID])
    ctx = JobContext(job, client or StubClient(), progress_enabled=True, progress_interval_s=interval_s)
    return backend.generate(job, ctx), ctx


def test_payload_keys_are_forwarded_as_they_are(server):
    job = make_job(
        max_tokens=32,
        temperature=0.3,
        top_p=0.9,
        seed=7,
        stop=["\n"],
        frequency_penalty=0.1,
        presence_penalty=0.2,
        reasoning_effort="low",
        max_context_length=4096,
        response_format={"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "object"}}},
    )
    generate(server, job)
    (sent,) = server.requests
    assert sent["model"] == MODEL_ID  # the Horde's name maps to the server's model id
    assert sent["stream"] is True and sent["stream_options"] == {"include_usage": True}
    for key in (
        "messages",
        "max_tokens",
        "temperature",
        "top_p",
        "seed",
        "stop",
        "frequency_penalty",
        "presence_penalty",
        "reasoning_effort",
        "response_format",
    ):
        assert sent[key] == job.payload[key], key
    assert "max_context_length" not in sent


def test_streamed_text_is_posted_as_whole_text_progress_and_submitted(server):
    server.reasoning = "thinking hard"
    reply, ctx = generate(server, make_job())
    assert reply.content == "Hello there, this is a fake model talking."
    assert reply.reasoning_content == "thinking hard "
    assert reply.finish_reason == "stop"
    assert reply.usage == {"prompt_tokens": 1, "completion_tokens": 11, "reasoning_tokens": 4}
    posts = ctx._client.posts
    assert posts and posts[-1] == (reply.content, "thinking hard ")
    assert all(reply.content.startswith(content) for content, _ in posts)


def test_progress_is_throttled(server):
    server.chunk_delay_s = 0.02
    _reply, ctx = generate(server, make_job(), interval_s=0.1)
    assert 1 <= len(ctx._client.posts) <= 4  # about 12 chunks over ~0.25 s


def test_tool_calls_are_streamed_into_the_reply_without_progress(server):
    reply, ctx = generate(server, make_job(tools=[TOOL], tool_choice="required"))
    assert reply.content is None and reply.finish_reason == "tool_calls"
    assert reply.tool_calls == [
        {"id": "call_fake", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}
    ]
    assert ctx._client.posts == []


def test_cancel_closes_the_stream(server):
    server.chunk_delay_s = 0.1
    server.reply = " ".join(["word"] * 60)
    started = time.monotonic()
    with pytest.raises(JobCancelled):
        generate(server, make_job(), StubClient(cancel_after=2), interval_s=0.05)
    assert time.monotonic() - started < 3
    deadline = time.monotonic() + 5
    while server.closed_early == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.closed_early == 1


def test_a_client_error_is_faulted_with_the_backend_message(server):
    server.fail_next = [(400, {"error": {"code": 400, "message": "the request exceeds the available context size"}})]
    with pytest.raises(JobFault) as excinfo:
        generate(server, make_job())
    assert excinfo.value.reason == "backend error: HTTP 400: the request exceeds the available context size"
    assert len(server.requests) == 1


def test_a_server_error_is_faulted_and_a_busy_server_retried(server):
    server.fail_next = [(500, {"detail": "model crashed"})]
    with pytest.raises(JobFault, match="backend error: HTTP 500: model crashed"):
        generate(server, make_job())
    server.fail_next = [(503, {"detail": {"msg": "Server is busy", "type": "service_unavailable"}})] * 2
    reply, _ctx = generate(server, make_job())
    assert reply.content.startswith("Hello")
    server.fail_next = [(503, {"detail": {"msg": "Server is busy"}})] * 3
    with pytest.raises(JobFault, match="HTTP 503: Server is busy"):
        generate(server, make_job())


def test_an_unreachable_backend_is_faulted_after_retries():
    backend = OpenAICompatBackend(BackendHTTP("http://127.0.0.1:9"), [MODEL_ID])
    job = make_job()
    with pytest.raises(JobFault, match="backend connection failed"):
        backend.generate(job, JobContext(job, StubClient(), progress_enabled=True))


def test_main_serves_a_job_end_to_end_with_the_openai_backend(server):
    horde = FakeHorde().start()
    try:
        job_id = horde.add_job({"messages": [{"role": "user", "content": "hello"}], "max_tokens": 16}, model=MODEL_ID)
        code = main(
            [
                "--horde-url",
                horde.url,
                "--api-key",
                WORKER_KEY,
                "--name",
                "oai-worker",
                "--backend",
                "openai",
                "--backend-url",
                server.url,
                "--once",
                "--wait",
                "1",
                "--progress-interval",
                "0",
            ]
        )
        assert code == 0
        (submit,) = horde.submits
        assert submit["id"] == job_id and submit["content"].startswith("Hello there")
        assert submit["usage"]["completion_tokens"] == 11
        pop = horde.pops[0]
        assert pop["models"] == [MODEL_ID] and pop["threads"] == 2 and "progress" in pop["features"]
        assert "tool_choice" not in pop["guarantees"]
        assert horde.progress[-1]["content"] == submit["content"]
    finally:
        horde.stop()
