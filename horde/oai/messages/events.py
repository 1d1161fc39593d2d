"""Anthropic's message stream, written for stream.drive().

message_start and a ping open the stream; while waiting, ping events (beside a
comment with the queue position) keep it alive. Plain text is relayed as the
worker posts progress: a thinking block (thinking_delta) while only reasoning
comes and thinking is on, then a text block (text_delta). Tool calls arrive
whole at the end, one tool_use block each with its input in one
input_json_delta. message_delta (stop_reason, usage, context_management when
it was sent, x_horde) and message_stop close it; a failure is an `error` event
in Anthropic's shape.
"""

from __future__ import annotations

import json

from horde import errors
from horde.chat.models import ChatRequest
from horde.oai import completion, stream
from horde.oai.messages import answer
from horde.oai.messages import errors as anthropic_errors
from horde.oai.waiter import Keepalive, Progress


def sse(kind: str, payload: dict) -> bytes:
    return f"event: {kind}\ndata: ".encode() + json.dumps(payload, separators=(",", ":")).encode() + b"\n\n"


PING = sse("ping", {"type": "ping"})


class MessagesWriter:
    def __init__(self, request: ChatRequest, shape: answer.Shape):
        self.request = request
        self.shape = shape
        self.thinking = shape.thinking
        self.live = stream.is_live(request)
        self.reasoning = self.content = ""
        self.diverged = False
        self.blocks = 0
        self.open_kind: str | None = None  # "thinking" or "text" while a block is open
        self.text_opened = False

    @property
    def streamed_chars(self) -> int:
        return len(self.content) + len(self.reasoning)

    def served_by(self, worker_id: str | None, model: str | None) -> None:
        """stream.advance() tells the state who serves; message_delta's x_horde says it."""

    def opening(self, request: ChatRequest) -> bytes:
        return sse("message_start", {"type": "message_start", "message": answer.start_message(request)}) + PING

    def keepalive(self, event: Keepalive) -> list[bytes]:
        return [stream.keepalive_comment(event), PING]

    def progress(self, event: Progress) -> tuple[list[bytes], list[bytes]] | None:
        added = stream.advance(self, event)
        if added is None:
            return None
        reasoning, content = added
        out: list[bytes] = []
        if reasoning and self.thinking and not self.text_opened:
            out += self._open("thinking", answer.thinking_block(""))
            out += [self._delta({"type": "thinking_delta", "thinking": piece}) for piece in stream.paced(reasoning)]
        if content:
            out += self._open_text()
            out += [self._delta({"type": "text_delta", "text": piece}) for piece in stream.paced(content)]
        return [], out

    def finish(self, request: ChatRequest) -> list[bytes]:
        texts = stream.final_texts(self, request, self.thinking)
        if isinstance(texts, errors.HordeError):
            self.diverged = isinstance(texts, errors.ChatStreamDiverged)
            return self.failure(texts)
        content, reasoning = texts
        reply = request.reply or {}
        out: list[bytes] = []
        if self.thinking and not self.text_opened and len(reasoning) > len(self.reasoning):
            out += self._open("thinking", answer.thinking_block(""))
            out.append(self._delta({"type": "thinking_delta", "thinking": reasoning[len(self.reasoning) :]}))
            self.reasoning = reasoning
        calls = completion.tool_calls(reply) or []
        if content or not calls:
            out += self._open_text()
            if len(content) > len(self.content):
                out.append(self._delta({"type": "text_delta", "text": content[len(self.content) :]}))
                self.content = content
        out += self._close()
        for call in calls:
            block = dict(answer.tool_use_block(call), input={})
            out += self._open("tool_use", block)
            out.append(self._delta({"type": "input_json_delta", "partial_json": call["function"]["arguments"]}))
            out += self._close()
        delta = {
            "type": "message_delta",
            "delta": {"stop_reason": answer.stop_reason(request), "stop_sequence": None},
            "usage": answer.usage(request),
            **self.shape.extras(request),
        }
        return out + [sse("message_delta", delta), sse("message_stop", {"type": "message_stop"})]

    def failure(self, error: errors.HordeError) -> list[bytes]:
        payload, _ = anthropic_errors.horde_error_body(error, self.request.id)
        return [sse("error", payload)]

    def diverge(self, why: str) -> list[bytes]:
        """The caller releases the request (cancelling it unless another holder waits on it)."""
        self.diverged = True
        return self.failure(stream.diverged(self.request.id, why))

    def _open(self, kind: str, block: dict) -> list[bytes]:
        if self.open_kind == kind:
            return []
        out = self._close()
        self.open_kind = kind
        return out + [
            sse("content_block_start", {"type": "content_block_start", "index": self.blocks, "content_block": block})
        ]

    def _open_text(self) -> list[bytes]:
        self.text_opened = True
        return self._open("text", {"type": "text", "text": ""})

    def _delta(self, delta: dict) -> bytes:
        return sse("content_block_delta", {"type": "content_block_delta", "index": self.blocks, "delta": delta})

    def _close(self) -> list[bytes]:
        if self.open_kind is None:
            return []
        out = []
        if self.open_kind == "thinking":
            out.append(self._delta({"type": "signature_delta", "signature": ""}))
        out.append(sse("content_block_stop", {"type": "content_block_stop", "index": self.blocks}))
        self.open_kind, self.blocks = None, self.blocks + 1
        return out
