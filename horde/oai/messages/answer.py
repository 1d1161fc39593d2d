"""Anthropic's `message` object for a Horde request: thinking, text and tool_use blocks."""

from __future__ import annotations

import json
from dataclasses import dataclass

from horde.chat.models import ChatRequest
from horde.oai import completion
from horde.oai.ignored import Ignored

STOP_REASONS = {"length": "max_tokens", "tool_calls": "tool_use"}


@dataclass(frozen=True)
class Shape:
    """What a request's answer shows beside the reply: thinking blocks, what was named, the edits applied."""

    thinking: bool
    ignored: Ignored | None = None
    #: context_management's applied edits; None when the request sent no context_management.
    applied_edits: list[dict] | None = None

    def extras(self, request: ChatRequest) -> dict:
        """The keys the message and message_delta carry beside the reply: context_management, x_horde."""
        out: dict = {}
        if self.applied_edits is not None:
            out["context_management"] = {"applied_edits": self.applied_edits}
        out["x_horde"] = completion.x_horde(request, self.ignored)
        return out


def message_id(request_id: str) -> str:
    return "msg_" + request_id.replace("-", "")


def stop_reason(request: ChatRequest) -> str:
    """end_turn, max_tokens or tool_use; workers report no matched stop sequence, so never stop_sequence."""
    reply = request.reply or {}
    if reply.get("tool_calls"):
        return "tool_use"
    return STOP_REASONS.get(reply.get("finish_reason") or "stop", "end_turn")


def tool_input(arguments: str) -> dict:
    """A call's arguments as the object Anthropic's tool_use.input is; conformance checked they are JSON."""
    try:
        value = json.loads(arguments or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def thinking_block(text: str) -> dict:
    return {"type": "thinking", "thinking": text, "signature": ""}


def tool_use_block(call: dict) -> dict:
    return {
        "type": "tool_use",
        "id": call["id"],
        "name": call["function"]["name"],
        "input": tool_input(call["function"]["arguments"]),
    }


def content_blocks(request: ChatRequest, thinking: bool) -> list[dict]:
    reply = request.reply or {}
    blocks = []
    if thinking and reply.get("reasoning_content"):
        blocks.append(thinking_block(reply["reasoning_content"]))
    calls = completion.tool_calls(reply) or []
    if reply.get("content") or not calls:
        blocks.append({"type": "text", "text": reply.get("content") or ""})
    blocks += [tool_use_block(call) for call in calls]
    return blocks


def usage(request: ChatRequest) -> dict:
    """Anthropic's counts: `input_tokens` are the prompt tokens not read from the cache, which
    `cache_read_input_tokens` counts (the worker's report)."""
    counted = completion.usage(request)
    cached = counted["prompt_tokens_details"]["cached_tokens"]
    return {
        "input_tokens": counted["prompt_tokens"] - cached,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": cached,
        "output_tokens": counted["completion_tokens"],
    }


def start_message(request: ChatRequest) -> dict:
    """The message of message_start: no content yet."""
    return {
        "id": message_id(request.id),
        "type": "message",
        "role": "assistant",
        "content": [],
        "model": request.served_model or request.models[0],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": request.prompt_tokens, "output_tokens": 0},
    }


def message(request: ChatRequest, shape: Shape) -> dict:
    return {
        "id": message_id(request.id),
        "type": "message",
        "role": "assistant",
        "content": content_blocks(request, shape.thinking),
        "model": request.served_model or request.models[0],
        "stop_reason": stop_reason(request),
        "stop_sequence": None,
        "usage": usage(request),
        **shape.extras(request),
    }
