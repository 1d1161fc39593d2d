"""The Responses API's stream: OpenAI's typed events with sequence_number, written for stream.drive().

response.created and response.in_progress open the stream; while waiting,
keepalive comments carry the queue position. Plain text is relayed as the
worker posts progress: a reasoning item (summary text deltas) while only
reasoning comes, then a message item (output_text deltas). Tool calls and JSON
output arrive whole at the end, as function_call items with their arguments
in one delta. response.completed (or response.incomplete) carries the same
response object as the JSON answer; a failure is an `error` event with the
Horde's code, then response.failed.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from horde import errors
from horde.chat.models import ChatRequest
from horde.oai import completion, stream
from horde.oai.responses import answer
from horde.oai.waiter import Keepalive, Progress


class ResponsesWriter:
    def __init__(
        self, request: ChatRequest, body: dict, shape: answer.Shape, finished_body: Callable[[ChatRequest], dict]
    ):
        """`finished_body(request)` builds (and stores) the final response object."""
        self.request = request
        self.body = body
        self.shape = shape
        self.include_reasoning = shape.include_reasoning
        self.finished_body = finished_body
        self.live = stream.is_live(request)
        self.sequence = 0
        self.reasoning = self.content = ""
        self.diverged = False
        self.items = 0
        self.reasoning_index: int | None = None  # the open reasoning item
        self.message_index: int | None = None  # the message item, once opened
        self.message_closed = False

    @property
    def streamed_chars(self) -> int:
        return len(self.content) + len(self.reasoning)

    def served_by(self, worker_id: str | None, model: str | None) -> None:
        """stream.advance() tells the state who serves; the final object says it."""

    def event(self, kind: str, **fields: Any) -> bytes:
        payload = {"type": kind, **fields, "sequence_number": self.sequence}
        self.sequence += 1
        return f"event: {kind}\ndata: ".encode() + json.dumps(payload, separators=(",", ":")).encode() + b"\n\n"

    def opening(self, request: ChatRequest) -> bytes:
        skeleton = answer.skeleton(request, self.body, "in_progress")
        return self.event("response.created", response=skeleton) + self.event("response.in_progress", response=skeleton)

    def keepalive(self, event: Keepalive) -> list[bytes]:
        return [stream.keepalive_comment(event)]

    def progress(self, event: Progress) -> tuple[list[bytes], list[bytes]] | None:
        added = stream.advance(self, event)
        if added is None:
            return None
        return [], self.relay(*added)

    def relay(self, reasoning: str, content: str) -> list[bytes]:
        """The events of text added to what was sent (`self.reasoning`, `self.content` already hold it)."""
        out: list[bytes] = []  # in order, and paced: the structure events are few beside the deltas
        if reasoning and self.include_reasoning and self.message_index is None:
            out += self._open_reasoning()
            out += [self._reasoning_delta(piece) for piece in stream.paced(reasoning)]
        if content:
            out += self._close_reasoning() + self._open_message()
            out += [self._text_delta(piece) for piece in stream.paced(content)]
        return out

    def finish(self, request: ChatRequest) -> list[bytes]:
        texts = stream.final_texts(self, request, self.include_reasoning)
        if isinstance(texts, errors.HordeError):
            self.diverged = isinstance(texts, errors.ChatStreamDiverged)
            return self.failure(texts)
        content, reasoning = texts
        reply = request.reply or {}
        out: list[bytes] = []
        if self.include_reasoning and self.message_index is None and len(reasoning) > len(self.reasoning):
            out += self._open_reasoning() + [self._reasoning_delta(reasoning[len(self.reasoning) :])]
            self.reasoning = reasoning
        out += self._close_reasoning()
        calls = completion.tool_calls(reply) or []
        if content or not calls:
            out += self._open_message()
            if len(content) > len(self.content):
                out.append(self._text_delta(content[len(self.content) :]))
                self.content = content
            out += self._close_message()
        for index, call in enumerate(calls):
            out += self._function_call(request.id, index, call)
        final = self.finished_body(request)
        kind = "response.incomplete" if final["status"] == "incomplete" else "response.completed"
        out.append(self.event(kind, response=final))
        return out

    def failure(self, error: errors.HordeError) -> list[bytes]:
        message = f"{error.message} ({error.rc}, request {self.request.id})"
        return [
            self.event("error", code=error.rc, message=error.message, param=error.param),
            self.event("response.failed", response=answer.failed_object(self.request, self.body, message)),
        ]

    def diverge(self, why: str) -> list[bytes]:
        """The caller releases the request (cancelling it unless another holder waits on it)."""
        self.diverged = True
        return self.failure(stream.diverged(self.request.id, why))

    def _open_reasoning(self) -> list[bytes]:
        if self.reasoning_index is not None:
            return []
        self.reasoning_index, self.items = self.items, self.items + 1
        item = answer.reasoning_item(self.request.id, "", status="in_progress")
        return [
            self.event("response.output_item.added", output_index=self.reasoning_index, item=item),
            self.event(
                "response.reasoning_summary_part.added",
                item_id=item["id"],
                output_index=self.reasoning_index,
                summary_index=0,
                part={"type": "summary_text", "text": ""},
            ),
        ]

    def _reasoning_delta(self, piece: str) -> bytes:
        return self.event(
            "response.reasoning_summary_text.delta",
            item_id=answer.item_id("rs", self.request.id),
            output_index=self.reasoning_index,
            summary_index=0,
            delta=piece,
        )

    def _close_reasoning(self) -> list[bytes]:
        if self.reasoning_index is None:
            return []
        index, self.reasoning_index = self.reasoning_index, None
        item = answer.reasoning_item(self.request.id, self.reasoning, shape=self.shape)
        part = {"type": "summary_text", "text": self.reasoning}
        return [
            self.event(
                "response.reasoning_summary_text.done",
                item_id=item["id"],
                output_index=index,
                summary_index=0,
                text=self.reasoning,
            ),
            self.event(
                "response.reasoning_summary_part.done",
                item_id=item["id"],
                output_index=index,
                summary_index=0,
                part=part,
            ),
            self.event("response.output_item.done", output_index=index, item=item),
        ]

    def _open_message(self) -> list[bytes]:
        if self.message_index is not None:
            return []
        self.message_index, self.items = self.items, self.items + 1
        item = answer.message_item(self.request.id, None, status="in_progress")
        return [
            self.event("response.output_item.added", output_index=self.message_index, item=item),
            self.event(
                "response.content_part.added",
                item_id=item["id"],
                output_index=self.message_index,
                content_index=0,
                part=answer.output_text_part(""),
            ),
        ]

    def _text_delta(self, piece: str) -> bytes:
        return self.event(
            "response.output_text.delta",
            item_id=answer.item_id("msg", self.request.id),
            output_index=self.message_index,
            content_index=0,
            delta=piece,
            logprobs=[],
        )

    def _close_message(self) -> list[bytes]:
        item = answer.message_item(self.request.id, self.content)
        index = self.message_index
        return [
            self.event(
                "response.output_text.done",
                item_id=item["id"],
                output_index=index,
                content_index=0,
                text=self.content,
                logprobs=[],
            ),
            self.event(
                "response.content_part.done",
                item_id=item["id"],
                output_index=index,
                content_index=0,
                part=answer.output_text_part(self.content),
            ),
            self.event("response.output_item.done", output_index=index, item=item),
        ]

    def _function_call(self, request_id: str, index: int, call: dict) -> list[bytes]:
        output_index, self.items = self.items, self.items + 1
        item = answer.function_call_item(request_id, index, call, self.shape.namespaces)
        opened = answer.function_call_item(
            request_id, index, call, self.shape.namespaces, arguments="", status="in_progress"
        )
        arguments = item["arguments"]
        return [
            self.event("response.output_item.added", output_index=output_index, item=opened),
            self.event(
                "response.function_call_arguments.delta", item_id=item["id"], output_index=output_index, delta=arguments
            ),
            self.event(
                "response.function_call_arguments.done",
                item_id=item["id"],
                name=item["name"],
                output_index=output_index,
                arguments=arguments,
            ),
            self.event("response.output_item.done", output_index=output_index, item=item),
        ]
