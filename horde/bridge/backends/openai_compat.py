"""The OpenAI-compatible backend: runs a job as one `POST /v1/chat/completions`.

The payload keys go to the server as they are (the backend applies its own chat
template); the reply is read from the SSE stream, posting the whole text so far as
progress about once a second, and closing the stream when the request is cancelled.
What the server can do was settled at start by `probe.py`; this module only generates.
"""

from __future__ import annotations

import logging
import time

import requests

from horde.bridge.backends import openai_text
from horde.bridge.backends.openai_http import BackendHTTP, BackendHTTPError
from horde.bridge.backends.slots import SlotChooser
from horde.bridge.backends.sse import ChatStreamAccumulator, StreamError, cached_prompt_tokens, iter_sse_data
from horde.bridge.context import JobContext
from horde.bridge.job import Job, JobCancelled, JobFault, Reply
from horde.bridge.messages import estimate_usage
from horde.bridge.text_job import TextJob, TextReply

log = logging.getLogger(__name__)

CHAT_PATH = "/v1/chat/completions"
#: The job payload's key for the Horde's (hashed) conversation key: the jobs of one conversation share a slot.
CONVERSATION_KEY = "conversation_key"
FORWARDED_KEYS = (
    "messages",
    "tools",
    "tool_choice",
    "parallel_tool_calls",
    "response_format",
    "max_tokens",
    "temperature",
    "top_p",
    "frequency_penalty",
    "presence_penalty",
    "seed",
    "stop",
    "reasoning_effort",
)
BACKEND_MAX_ATTEMPTS = 3
BACKEND_RETRY_DELAY_S = 2.0
BACKEND_CONNECT_TIMEOUT_S = 10.0
#: Time kept from the job's ttl for the submit, so a slow backend is faulted in time.
SUBMIT_MARGIN_S = 5.0
MIN_READ_TIMEOUT_S = 5.0


class OpenAICompatBackend:
    def __init__(
        self,
        http: BackendHTTP,
        model_ids: list[str],
        *,
        streaming: bool = True,
        stream_usage: bool = True,
        llama_slots: int | None = None,
    ):
        """`llama_slots`: a llama.cpp server's slot count, whose prompt cache the jobs of a conversation reuse
        (`cache_prompt`, and the conversation's slot: horde/bridge/backends/slots.py); None for other servers."""
        self.http = http
        self.model_ids = list(model_ids)
        self.streaming = streaming
        self.stream_usage = stream_usage
        self.slots = SlotChooser(llama_slots) if llama_slots else None

    def backend_model(self, horde_model: str) -> str:
        """The server's id for a job's model: the same name when served, else its first model."""
        return horde_model if horde_model in self.model_ids else self.model_ids[0]

    def request_body(self, job: Job, slot: int | None = None) -> dict:
        body: dict[str, object] = {"model": self.backend_model(job.model)}
        body.update({key: job.payload[key] for key in FORWARDED_KEYS if key in job.payload})
        if self.streaming:
            body["stream"] = True
            if self.stream_usage:
                body["stream_options"] = {"include_usage": True}
        if self.slots is not None:  # llama.cpp: reuse the slot's cached prefix, on the conversation's slot
            body["cache_prompt"] = True
            if slot is not None:
                body["id_slot"] = slot
        return body

    def generate(self, job: Job, ctx: JobContext) -> Reply:
        if self.slots is None:
            return self._generate(job, ctx, self.request_body(job))
        with self.slots.slot_for(job.payload.get(CONVERSATION_KEY)) as slot:
            return self._generate(job, ctx, self.request_body(job, slot))

    def _generate(self, job: Job, ctx: JobContext, body: dict) -> Reply:
        reason = "backend error"
        for attempt in range(1, BACKEND_MAX_ATTEMPTS + 1):
            if ctx.cancelled:
                raise JobCancelled()
            try:
                return self._attempt(job, ctx, body)
            except BackendHTTPError as exc:
                reason = f"backend error: HTTP {exc.status}: {exc.message}"
                if not exc.transient:
                    raise JobFault(reason) from None
            except requests.ConnectTimeout as exc:
                reason = f"backend unreachable: {exc.__class__.__name__}"
            except requests.Timeout:
                raise JobFault(f"backend timed out (read timeout {self._read_timeout_s(ctx):.0f} s)") from None
            except (requests.ConnectionError, requests.exceptions.ChunkedEncodingError) as exc:
                if "timed out" in str(exc).lower():  # requests wraps a read timeout mid-stream
                    raise JobFault("backend timed out while streaming") from None
                reason = f"backend connection failed: {exc.__class__.__name__}"
            except StreamError as exc:
                raise JobFault(f"backend error in stream: {exc}") from None
            if ctx.progress_posts:
                raise JobFault(f"{reason} (after streaming had started)")
            log.warning("job %s: %s (attempt %d of %d)", job.id, reason, attempt, BACKEND_MAX_ATTEMPTS)
            if attempt < BACKEND_MAX_ATTEMPTS and ctx.wait(BACKEND_RETRY_DELAY_S):
                raise JobCancelled()
        raise JobFault(reason)

    def complete(self, job: TextJob) -> TextReply:
        """A text job's generation, through the server's /v1/completions."""
        return openai_text.complete(self, job)

    def _read_timeout_s(self, ctx: JobContext) -> float:
        return max(MIN_READ_TIMEOUT_S, ctx.remaining_s() - SUBMIT_MARGIN_S)

    def _attempt(self, job: Job, ctx: JobContext, body: dict) -> Reply:
        timeout = (BACKEND_CONNECT_TIMEOUT_S, self._read_timeout_s(ctx))
        acc = ChatStreamAccumulator()
        if not self.streaming:
            acc.feed(self.http.post_json(CHAT_PATH, body, timeout))
            return make_reply(job, acc)
        response = self.http.open_stream(CHAT_PATH, body, timeout)
        try:
            for data in iter_sse_data(response.iter_lines()):
                acc.feed_data(data)
                if ctx.report(acc.content, acc.reasoning):
                    raise JobCancelled()
                if time.monotonic() > ctx.deadline - SUBMIT_MARGIN_S:
                    raise JobFault("backend too slow: the job's ttl ran out while generating")
        finally:
            response.close()  # on cancel this is what stops llama.cpp and vLLM generating
        if acc.chunks == 0:
            raise JobFault("backend error: the stream ended without any chunk")
        return make_reply(job, acc)


def make_reply(job: Job, acc: ChatStreamAccumulator) -> Reply:
    calls = acc.tool_calls()
    content = acc.content
    reasoning = acc.reasoning or None
    return Reply(
        content=None if calls and not content else content,
        reasoning_content=reasoning,
        tool_calls=calls,
        finish_reason=map_finish_reason(acc.finish_reason, bool(calls)),
        usage=map_usage(acc.usage, job, content, reasoning, calls) | cached_usage(acc.usage, acc.timings),
    )


def map_finish_reason(raw: str | None, has_calls: bool) -> str:
    """The Horde knows stop, length and tool_calls; servers also say eos, function_call, ..."""
    if raw == "length":
        return "length"
    if has_calls or raw in ("tool_calls", "function_call"):
        return "tool_calls"
    return "stop"


def cached_usage(usage: dict | None, timings: dict | None) -> dict:
    """The submit's `cached_tokens`, when the server says how many prompt tokens it read from its cache."""
    cached = cached_prompt_tokens(usage, timings)
    return {} if cached is None else {"cached_tokens": cached}


def map_usage(raw: dict | None, job: Job, content: str, reasoning: str | None, calls: list[dict]) -> dict:
    """The server's counts when it gave them (stream_options.include_usage), else an estimate."""
    estimate = estimate_usage(job.messages, content, reasoning, calls)
    if not raw:
        return estimate
    usage = {}
    for key in ("prompt_tokens", "completion_tokens"):
        value = raw.get(key)
        usage[key] = int(value) if isinstance(value, (int, float)) and value >= 0 else estimate[key]
    details = raw.get("completion_tokens_details") or {}
    reasoning_tokens = details.get("reasoning_tokens") if isinstance(details, dict) else None
    if isinstance(reasoning_tokens, int) and reasoning_tokens > 0:
        usage["reasoning_tokens"] = reasoning_tokens
    elif reasoning:
        usage["reasoning_tokens"] = min(estimate["reasoning_tokens"], usage["completion_tokens"])
    return usage
