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
from typing import TYPE_CHECKING, Any, Protocol

from horde import errors
from horde.chat import service
from horde.chat.models import CANCELLED, FAULTED, WAITING, ChatRequest
from horde.oai import completion
from horde.oai.errors import cancelled_error, faulted_error, from_horde_error
from horde.oai.ignored import Ignored
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
    if request.state != WAITING:
        return keepalive_comment(Keepalive(0, 0))
    with runtime.db.read() as session:
        pool = service.pool(session, runtime.settings, request, runtime.snapshots)
    return keepalive_comment(Keepalive(pool["queue_position"], pool["wait_time"]))


def is_live(request: ChatRequest) -> bool:
    """Progress is relayed as it comes only for plain text: tool calls and JSON are sent whole at the end."""
    response_format = (request.payload.get("response_format") or {}).get("type")
    return not request.payload.get("tools") and response_format not in ("json_object", "json_schema")


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

    def __init__(
        self, request: ChatRequest, include_reasoning: bool, include_usage: bool, ignored: Ignored | None = None
    ):
        self.request_id = request.id
        self.ignored = ignored
        self.id = completion.completion_id(request)
        self.created = completion.created_epoch(request)
        self.model = request.models[0]
        self.service_tier = completion.service_tier(request)
        self.fingerprint: str | None = None
        self.include_reasoning = include_reasoning
        self.include_usage = include_usage
        self.live = is_live(request)
        self.role_sent = False
        self.diverged = False
        self.outage = False
        #: The stream ended because this process shuts down; the request goes on for a retry to attach to.
        self.interrupted = False
        self.content = ""
        self.reasoning = ""

    @property
    def streamed_chars(self) -> int:
        return len(self.content) + len(self.reasoning)

    def chunk(self, delta: dict, finish_reason: str | None = None, **extra: Any) -> dict:
        body = {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "service_tier": self.service_tier,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason, "logprobs": None}],
        }
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


class TextState(Protocol):
    """What each dialect's stream state tracks of the text it sent."""

    live: bool
    reasoning: str
    content: str

    def served_by(self, worker_id: str | None, model: str | None) -> None: ...


class StreamWriter(Protocol):
    """A dialect's stream, for drive(): the bytes of each waiter event."""

    @property
    def streamed_chars(self) -> int: ...

    def keepalive(self, event: Keepalive) -> list[bytes]: ...

    def progress(self, event: Progress) -> tuple[list[bytes], list[bytes]] | None: ...

    def finish(self, request: ChatRequest) -> list[bytes]: ...

    def failure(self, error: errors.HordeError) -> list[bytes]: ...

    def diverge(self, why: str) -> list[bytes]: ...


def advance(state: TextState, event: Progress) -> tuple[str, str] | None:
    """The reasoning and content a progress post adds to what `state` sent; None if it diverged."""
    if not state.live:
        return "", ""
    new_reasoning, new_content = event.reasoning, event.content
    if not new_reasoning.startswith(state.reasoning) or not new_content.startswith(state.content):
        return None
    state.served_by(event.worker_id, event.model)
    added = new_reasoning[len(state.reasoning) :], new_content[len(state.content) :]
    state.reasoning, state.content = new_reasoning, new_content
    return added


NOT_CONTINUED = "the final reply does not continue the text sent."


def final_texts(state: TextState, request: ChatRequest, with_reasoning: bool) -> tuple[str, str] | errors.HordeError:
    """The finished reply's content and reasoning, or the error that ends the stream instead.

    The error is the request's own (faulted, cancelled) or ChatStreamDiverged when the reply does not
    continue what `state` sent (its reasoning only counts `with_reasoning`).
    """
    if request.state == FAULTED:
        return faulted_error(request)
    if request.state == CANCELLED:
        return cancelled_error(request)
    reply = request.reply or {}
    content, reasoning = reply.get("content") or "", reply.get("reasoning_content") or ""
    if not content.startswith(state.content) or (with_reasoning and not reasoning.startswith(state.reasoning)):
        return diverged(request.id, NOT_CONTINUED)
    return content, reasoning


def relay(state: StreamState, event: Progress) -> tuple[list[bytes], list[bytes]] | None:
    """Events for a progress post: the new reasoning, then the new content; None if it diverged."""
    added = advance(state, event)
    if added is None:
        return None
    pieces = []
    if state.include_reasoning:
        pieces += [("reasoning_content", piece) for piece in paced(added[0])]
    pieces += [("content", piece) for piece in paced(added[1])]
    role_events = state.role() if pieces else []
    return role_events, [data_event(state.chunk({key: piece})) for key, piece in pieces]


def error_event(error: errors.HordeError, request_id: str) -> list[bytes]:
    return [data_event(from_horde_error(error, request_id)), DONE_EVENT]


def diverged(request_id: str, why: str) -> errors.HordeError:
    return errors.ChatStreamDiverged(
        f"The stream of request {request_id} diverged: {why} Discard the partial text; the request is not retried "
        "on this stream.",
        metadata={"request_id": request_id},
    )


def finish(state: StreamState, request: ChatRequest) -> list[bytes]:
    """The rest of the reply, then the finish chunk, the usage chunk and [DONE]."""
    if request.state == FAULTED:
        return error_event(faulted_error(request), request.id)
    if request.state == CANCELLED:
        return error_event(cancelled_error(request), request.id)
    reply = request.reply or {}
    content, reasoning = reply.get("content") or "", reply.get("reasoning_content") or ""
    if not content.startswith(state.content) or (state.include_reasoning and not reasoning.startswith(state.reasoning)):
        return error_event(diverged(request.id, "the final reply does not continue the text sent."), request.id)
    state.served_by(request.worker_id, request.served_model)
    state.model = request.served_model or state.model
    out = state.role()
    if state.include_reasoning and len(reasoning) > len(state.reasoning):
        out.append(data_event(state.chunk({"reasoning_content": reasoning[len(state.reasoning) :]})))
    if len(content) > len(state.content):
        out.append(data_event(state.chunk({"content": content[len(state.content) :]})))
    calls = completion.tool_calls(reply)
    if calls:
        indexed = [dict(call, index=index) for index, call in enumerate(calls)]
        out.append(data_event(state.chunk({"tool_calls": indexed})))
    x_horde = completion.x_horde(request, state.ignored)
    # x_horde at the top level, as on the completion object, and in the choice beside native_finish_reason,
    # for clients that read the finish fields from the choice.
    finish_chunk = state.chunk(
        {}, completion.finish_reason(request), native_finish_reason=reply.get("finish_reason"), x_horde=x_horde
    )
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
    """Translate waiter events into SSE bytes until the request ends, or the database goes away.

    drive() itself, not a generator around it: each generator level is stack that a waiting stream keeps.
    """
    return drive(ChatWriter(state), watcher)


class ChatWriter:
    """The chat completion chunks of one stream, for drive()."""

    def __init__(self, state: StreamState):
        self.state = state

    @property
    def streamed_chars(self) -> int:
        return self.state.streamed_chars

    def keepalive(self, event: Keepalive) -> list[bytes]:
        return [keepalive_comment(event)]

    def progress(self, event: Progress) -> tuple[list[bytes], list[bytes]] | None:
        return relay(self.state, event)

    def finish(self, request: ChatRequest) -> list[bytes]:
        return finish(self.state, request)

    def failure(self, error: errors.HordeError) -> list[bytes]:
        self.state.interrupted = isinstance(error, errors.ServerShuttingDown)
        return error_event(error, self.state.request_id)

    def diverge(self, why: str) -> list[bytes]:
        """The caller releases the request (cancelling it unless another holder waits on it)."""
        self.state.diverged = True
        return error_event(diverged(self.state.request_id, why), self.state.request_id)

    def outage(self, error: errors.ServiceUnavailable) -> list[bytes]:
        """The database went away: the stream ends on service_unavailable, and the caller abandons the request."""
        self.state.outage = True
        error.should_retry = False
        return error_event(error, self.state.request_id)


RESTART_AFTER_TEXT = "the worker stopped and the Horde would start the reply over with another worker."
CHANGED_TEXT = "the worker's text changed after it was sent."


def drive(writer: StreamWriter, watcher: Iterable[object]) -> Iterator[bytes]:
    """The loop every dialect's stream shares: waiter events in, the writer's SSE bytes out, until the end.

    writer.progress returns (events now, events paced PACE_INTERVAL_S apart), or None when the
    worker's text no longer continues what was sent. A writer with an `outage` method ends its stream with
    those bytes when the database goes away; without one, ServiceUnavailable goes to the caller.
    """
    try:
        for event in watcher:
            if isinstance(event, Keepalive):
                yield from writer.keepalive(event)
            elif isinstance(event, Progress):
                out = writer.progress(event)
                if out is None:
                    yield from writer.diverge(CHANGED_TEXT)
                    return
                immediate, paced_events = out
                yield from immediate
                for index, chunk in enumerate(paced_events):
                    if index:
                        time.sleep(PACE_INTERVAL_S)
                    yield chunk
            elif isinstance(event, Restarted):
                if writer.streamed_chars:
                    yield from writer.diverge(RESTART_AFTER_TEXT)
                    return
            elif isinstance(event, Finished):
                yield from writer.finish(event.request)
                return
            elif isinstance(event, Failed):
                yield from writer.failure(event.error)
                return
    except errors.ServiceUnavailable as error:
        outage = getattr(writer, "outage", None)
        if outage is None:
            raise
        yield from outage(error)
