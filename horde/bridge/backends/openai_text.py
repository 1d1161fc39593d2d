"""Text jobs on an OpenAI-compatible server: one `POST /v1/completions` per generation.

The Kobold samplers go to the server under llama.cpp's names where it has them and
unchanged otherwise (servers ignore what they do not know). The stop sequences are
not sent: servers drop the stop string from the text, while the AI Horde's contract
keeps it. The stream is read instead and closed at the first stop sequence, which
stops the server generating; without streaming the text is cut afterwards.
"""

from __future__ import annotations

import json
import time
from typing import Protocol

import requests

from horde.bridge.backends.openai_http import BackendHTTP, BackendHTTPError
from horde.bridge.backends.slots import SlotChooser
from horde.bridge.backends.sse import StreamError, cached_prompt_tokens, iter_sse_data
from horde.bridge.job import JobFault
from horde.bridge.text_job import TextJob, TextReply, finish, first_stop


class TextBackend(Protocol):
    """What a text completion reads of its backend (OpenAICompatBackend, horde/bridge/backends/openai_compat.py,
    which calls `complete`): named here so that this module does not import the one that imports it."""

    http: BackendHTTP
    streaming: bool
    slots: SlotChooser | None

    def backend_model(self, horde_model: str) -> str: ...


COMPLETIONS_PATH = "/v1/completions"
#: Kobold name -> the name llama.cpp's server reads; other samplers are sent under their own name.
RENAMED_SAMPLERS = {
    "rep_pen": "repeat_penalty",
    "rep_pen_range": "repeat_last_n",
    "typical": "typical_p",
    "tfs": "tfs_z",
    "dynatemp_range": "dynatemp_range",
    "dynatemp_exponent": "dynatemp_exponent",
}
SAMPLERS = (
    "temperature",
    "top_p",
    "top_k",
    "top_a",
    "min_p",
    "smoothing_factor",
    "seed",
    "frequency_penalty",
    "presence_penalty",
    *RENAMED_SAMPLERS,
)
CONNECT_TIMEOUT_S = 10.0
SUBMIT_MARGIN_S = 5.0
MIN_READ_TIMEOUT_S = 5.0


def request_body(job: TextJob, model: str, streaming: bool) -> dict:
    body = {"model": model, "prompt": job.prompt, "max_tokens": job.max_length}
    for key in SAMPLERS:
        if job.payload.get(key) is not None:
            body[RENAMED_SAMPLERS.get(key, key)] = job.payload[key]
    if streaming:
        body["stream"] = True
    return body


def complete(backend: TextBackend, job: TextJob) -> TextReply:
    """One generation of `job` on the backend's server."""
    streaming = backend.streaming
    body = request_body(job, backend.backend_model(job.model), streaming)
    if backend.slots is not None:  # llama.cpp: reuse the cached prefix of an earlier prompt
        body["cache_prompt"] = True
    deadline = time.monotonic() + job.ttl_s - SUBMIT_MARGIN_S
    timeout = (CONNECT_TIMEOUT_S, max(MIN_READ_TIMEOUT_S, deadline - time.monotonic()))
    try:
        if not streaming:
            answer = backend.http.post_json(COMPLETIONS_PATH, body, timeout)
            choice = (answer.get("choices") or [{}])[0]
            tokens = (answer.get("usage") or {}).get("completion_tokens")
            reply = finish(str(choice.get("text") or ""), job, _finish_reason(choice), tokens)
            reply.cached_tokens = cached_prompt_tokens(answer.get("usage"), answer.get("timings"))
            return reply
        return _streamed(backend, job, body, timeout, deadline)
    except BackendHTTPError as exc:
        raise JobFault(f"backend error: HTTP {exc.status}: {exc.message}") from None
    except (requests.RequestException, StreamError) as exc:
        raise JobFault(f"backend failed: {exc.__class__.__name__}: {exc}") from None


def _streamed(backend, job: TextJob, body: dict, timeout, deadline: float) -> TextReply:
    text, reason, cached = "", "length", None
    response = backend.http.open_stream(COMPLETIONS_PATH, body, timeout)
    try:
        for data in iter_sse_data(response.iter_lines()):
            chunk = json.loads(data)
            cached = cached_prompt_tokens(chunk.get("usage"), chunk.get("timings")) if cached is None else cached
            choice = (chunk.get("choices") or [{}])[0]
            text += choice.get("text") or ""
            if choice.get("finish_reason"):
                reason = _finish_reason(choice)
            if first_stop(text, job.stop_sequences) is not None:
                break  # closing the stream below stops the server
            if time.monotonic() > deadline:
                raise JobFault("backend too slow: the job's ttl ran out while generating")
    except ValueError as exc:
        raise StreamError(f"a chunk is not JSON: {exc}") from None
    finally:
        response.close()
    reply = finish(text, job, reason)
    reply.cached_tokens = cached
    return reply


def _finish_reason(choice: dict) -> str:
    return "length" if choice.get("finish_reason") == "length" else "stop"
