"""Server-sent events for `stream: true`, in the guide's order.

keepalive comments while waiting → one role chunk → reasoning → content →
one tool-call chunk → finish chunk → usage chunk (include_usage) → [DONE].
Progress posts are relayed live (paced into smaller chunks) for requests
without tools or a non-text response_format; the final reply must continue
what was sent, else the stream ends in ChatStreamDiverged.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from horde import errors
from horde.chat import service
from horde.chat.models import ChatRequest
from horde.oai import completion
from horde.oai.errors import cancelled_error, faulted_error, from_horde_error
from horde.oai.waiter import Failed, Finished, Keepalive, Progress, Restarted

if TYPE_CHECKING:
    from horde.runtime import Runtime

PACED_PIECES = 4
PACE_INTERVAL_S = 0.05
DONE_EVENT = b"data: [DONE]\n\n"


def data_event(payload: dict) -> bytes:
    return b"data: " + json.dumps(payload, separators=(",", ":")).encode() + b"\n\n"


def keepalive_comment(event: Keepalive) -> bytes:
    return f": horde queue_position={event.queue_position} wait_time={event.wait_time}\n\n".encode()


def opening_comment(runtime: Runtime, request: ChatRequest) -> bytes:
    """The first keepalive, at once: the headers go out after the first status read, not a keepalive later."""
    if request.state != "waiting":
        return keepalive_comment(Keepalive(0, 0))
    with runtime.db.read() as session:
        pool = service.pool(session, runtime.settings, request, runtime.snapshots)
    return keepalive_comment(Keepalive(pool["queue_position"], pool["wait_time"]))


def paced(text: str) -> list[str]:
    """Split a delta into a few pieces at word boundaries where possible."""
    if len(text) <= 16:
        return [text] if text else []
    size = max(1, len(text) // PACED_PIECES)
    pieces, start = [], 0
    while start < len(text):
        end = min(len(text), start + size)
        space = text.rfind(" ", start + 1, end + 1)
        if end < len(text) and space > start:
            end = space
        pieces.append(text[start:end])
        start = end
    return pieces


class StreamState:
    """What has been sent on one stream, to continue (or refuse to) from the final reply."""

    def __init__(self, request: ChatRequest, include_reasoning: bool, include_usage: bool):
        self.request_id = request.id
        self.id = completion.completion_id(request)
        self.created = completion.created_epoch(request)
        self.model = request.models[0]
        self.fingerprint: str | None = None
        self.include_reasoning = include_reasoning
        self.include_usage = include_usage
        self.live = not request.payload.get("tools") and (request.payload.get("response_format") or {}).get(
            "type") not in ("json_object", "json_schema")
        self.role_sent = False
        self.diverged = False
        self.outage = False
        self.content = ""
        self.reasoning = ""

    @property
    def streamed_chars(self) -> int:
        return len(self.content) + len(self.reasoning)

    def chunk(self, delta: dict, finish_reason: str | None =None, **extra: Any) -> dict:
        body = {"id": self.id, "object": "chat.completion.chunk", "created": self.created, "model": self.model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason, "logprobs": None}]}
        if self.fingerprint is not None:
            body["system_fingerprint"] = self.fingerprint
        if finish_reason is not None:
            body["choices"][0].update(extra)
        return body

    def role(self) -> list[bytes]:
        if self.role_sent:
            return []
        self.role_sent = True
        return [data_event(self.chunk({"role": "assistant"}))]

    def served_by(self, worker_id: str | None, model: str | None) -> None:
        if worker_id and self.fingerprint is None:
            self.fingerprint = completion.system_fingerprint(worker_id, model)
            self.model = model or self.model


def relay(state: StreamState, event: Progress) -> tuple[list[bytes], list[bytes]] | None:
    """Events for a progress post: the new reasoning, then the new content; None if it diverged."""
    if not state.live:
        return [], []
    new_reasoning, new_content = event.reasoning, event.content
    if not new_reasoning.startswith(state.reasoning) or not new_content.startswith(state.content):
        return None
    state.served_by(event.worker_id, event.model)
    pieces = []
    if state.include_reasoning:
        pieces += [("reasoning_content", piece) for piece in paced(new_reasoning[len(state.reasoning):])]
    pieces += [("content", piece) for piece in paced(new_content[len(state.content):])]
    state.reasoning, state.content = new_reasoning, new_content
    role_events = state.role() if pieces else []
    return role_events, [data_event(state.chunk({key: piece})) for key, piece in pieces]


def error_event(error: errors.HordeError, request_id: str) -> list[bytes]:
    return [data_event(from_horde_error(error, request_id)), DONE_EVENT]


def diverged(request_id: str, why: str) -> errors.HordeError:
    return errors.ChatStreamDiverged(
        f"The stream of request {request_id} diverged: {why} Discard the partial text; the request is not retried "
        "on this stream.", metadata={"request_id": request_id})


def finish(state: StreamState, request: ChatRequest) -> list[bytes]:
    """The rest of the reply, then the finish chunk, the usage chunk and [DONE]."""
    if request.state == "faulted":
        return error_event(faulted_error(request), request.id)
    if request.state == "cancelled":
        return error_event(cancelled_error(request), request.id)
    reply = request.reply or {}
    content, reasoning = reply.get("content") or "", reply.get("reasoning_content") or ""
    if not content.startswith(state.content) or (state.include_reasoning and not reasoning.startswith(state.reasoning)):
        return error_event(diverged(request.id, "the final reply does not continue the text sent."), request.id)
    state.served_by(request.worker_id, request.served_model)
    state.model = request.served_model or state.model
    out = state.role()
    if state.include_reasoning and len(reasoning) > len(state.reasoning):
        out.append(data_event(state.chunk({"reasoning_content": reasoning[len(state.reasoning):]})))
    if len(content) > len(state.content):
        out.append(data_event(state.chunk({"content": content[len(state.content):]})))
    calls = completion.tool_calls(reply)
    if calls:
        indexed = [dict(call, index=index) for index, call in enumerate(calls)]
        out.append(data_event(state.chunk({"tool_calls": indexed})))
    x_horde = completion.x_horde(request)
    # x_horde at the top level, as on the completion object, and in the choice beside native_finish_reason,
    # for clients that read the finish fields from the choice.
    finish_chunk = state.chunk({}, completion.finish_reason(request), native_finish_reason=reply.get("finish_reason"),
                               x_horde=x_horde)
    finish_chunk["x_horde"] = x_horde
    out.append(data_event(finish_chunk))
    if state.include_usage:
        usage_chunk = state.chunk({})
        usage_chunk["choices"] = []
        usage_chunk["usage"] = completion.usage(request)
        out.append(data_event(usage_chunk))
    out.append(DONE_EVENT)
    return out


def events(state: StreamState, watcher: Iterable[object]) -> Iterator[bytes]:
    """Translate waiter events into SSE bytes until the request ends, or the database goes away."""
    try:
        yield from _translate(state, watcher)
    except errors.ServiceUnavailable as error:
        state.outage = True
        error.should_retry = False
        yield from error_event(error, state.request_id)


def _translate(state: StreamState, watcher: Iterable[object]) -> Iterator[bytes]:
    for event in watcher:
        if isinstance(event, Keepalive):
            yield keepalive_comment(event)
        elif isinstance(event, Progress):
            out = relay(state, event)
            if out is None:
                yield from _diverge(state, "the worker's text changed after it was sent.")
                return
            role_events, piece_events = out
            yield from role_events
            for index, chunk in enumerate(piece_events):
                if index:
                    time.sleep(PACE_INTERVAL_S)
                yield chunk
        elif isinstance(event, Restarted):
            if state.streamed_chars:
                yield from _diverge(state, "the worker stopped and the Horde would start the reply over "
                                                    "with another worker.")
                return
        elif isinstance(event, Finished):
            yield from finish(state, event.request)
            return
        elif isinstance(event, Failed):
            yield from error_event(event.error, state.request_id)
            return


def _diverge(state: StreamState, why: str):
    """The caller releases the request (cancelling it unless another holder waits on it)."""
    state.diverged = True
    yield from error_event(diverged(state.request_id, why), state.request_id)
