"""The `response` object of a Horde request, in OpenAI's Responses shape.

Output items in order: `reasoning` (when the worker returned reasoning and
include_reasoning is on; with `encrypted_content` when the request included
reasoning.encrypted_content), `message` with one `output_text` part (when there
is text), `function_call` per tool call (a namespace function's with its `name`
and `namespace`). Ids derive from the request id, so the JSON answer, the
stream events and the stored copy name the same items.
"""

from __future__ import annotations

import calendar
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from horde.chat.models import ChatRequest
from horde.oai import completion
from horde.oai.ignored import Ignored
from horde.oai.responses.tools import Namespaces
from horde.timeutil import utcnow


@dataclass(frozen=True)
class Shape:
    """How a request's output is written beside the reply itself."""

    include_reasoning: bool = True
    ignored: Ignored | None = None
    namespaces: Namespaces = field(default_factory=Namespaces)
    #: Seals a reasoning text into encrypted_content; None when the request did not include it.
    seal: Callable[[str], str] | None = None


def response_id(request_id: str) -> str:
    return "resp_" + request_id.replace("-", "")


def item_id(prefix: str, request_id: str, index: int = 0) -> str:
    suffix = f"_{index}" if index else ""
    return f"{prefix}_{request_id.replace('-', '')}{suffix}"


def reasoning_item(request_id: str, text: str, status: str = "completed", shape: Shape | None = None) -> dict:
    summary = [{"type": "summary_text", "text": text}] if text else []
    item = {"type": "reasoning", "id": item_id("rs", request_id), "summary": summary, "status": status}
    if shape is not None and shape.seal is not None and status == "completed":
        item["encrypted_content"] = shape.seal(text)
    return item


def output_text_part(text: str) -> dict:
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}


def message_item(request_id: str, text: str | None, status: str = "completed") -> dict:
    content = [] if text is None else [output_text_part(text)]
    return {
        "type": "message",
        "id": item_id("msg", request_id),
        "role": "assistant",
        "status": status,
        "content": content,
    }


def function_call_item(
    request_id: str,
    index: int,
    call: dict,
    namespaces: Namespaces,
    arguments: str | None = None,
    status: str = "completed",
) -> dict:
    """The call as the client declared its tool: a namespace function's flat name split back."""
    namespace, name = namespaces.split(call["function"]["name"])
    item = {
        "type": "function_call",
        "id": item_id("fc", request_id, index + 1),
        "call_id": call["id"],
        "name": name,
        "arguments": call["function"]["arguments"] if arguments is None else arguments,
        "status": status,
    }
    if namespace is not None:
        item["namespace"] = namespace
    return item


def output_items(request: ChatRequest, shape: Shape) -> list[dict]:
    reply = request.reply or {}
    items = []
    if shape.include_reasoning and reply.get("reasoning_content"):
        items.append(reasoning_item(request.id, reply["reasoning_content"], shape=shape))
    calls = completion.tool_calls(reply) or []
    if reply.get("content") or not calls:
        items.append(message_item(request.id, reply.get("content") or ""))
    items += [function_call_item(request.id, index, call, shape.namespaces) for index, call in enumerate(calls)]
    return items


def usage(request: ChatRequest) -> dict:
    counted = completion.usage(request)
    return {
        "input_tokens": counted["prompt_tokens"],
        "input_tokens_details": {"cached_tokens": completion.cached_tokens(request), "cache_write_tokens": 0},
        "output_tokens": counted["completion_tokens"],
        "output_tokens_details": {"reasoning_tokens": counted["completion_tokens_details"]["reasoning_tokens"]},
        "total_tokens": counted["total_tokens"],
    }


def echo(body: dict) -> dict:
    """The request's own settings, as OpenAI echoes them on the response."""
    text = body.get("text") or {}
    return {
        "background": bool(body.get("background")),
        "instructions": body.get("instructions"),
        "max_output_tokens": body.get("max_output_tokens"),
        "metadata": body.get("metadata") or {},
        "parallel_tool_calls": body.get("parallel_tool_calls", True),
        "previous_response_id": body.get("previous_response_id"),
        "reasoning": body.get("reasoning"),
        "store": body.get("store", True),
        "temperature": body.get("temperature", 1.0),
        "text": {"format": text.get("format") or {"type": "text"}},
        "tool_choice": body.get("tool_choice", "auto"),
        "tools": [_tool_echo(tool) for tool in body.get("tools") or [] if tool.get("type") in ECHOED_TOOLS],
        "top_p": body.get("top_p", 1.0),
        "truncation": body.get("truncation", "disabled"),
        "user": body.get("user"),
    }


ECHOED_TOOLS = ("function", "namespace")


def _tool_echo(tool: dict) -> dict:
    """A served tool as OpenAI echoes it (the hosted tools the Horde dropped are not): a function's strict is
    false unless sent (the chat contract's default)."""
    if tool.get("type") == "namespace":
        return {
            "type": "namespace",
            "name": tool.get("name"),
            "description": tool.get("description") or "",
            "tools": [_tool_echo(inner) for inner in tool.get("tools") or []],
        }
    return {
        "type": "function",
        "name": tool.get("name"),
        "description": tool.get("description"),
        "parameters": tool.get("parameters"),
        "strict": bool(tool.get("strict")),
    }


def skeleton(request: ChatRequest, body: dict, status: str) -> dict:
    """A response without output: what response.created and response.failed carry."""
    model = request.served_model or request.models[0]
    result: dict[str, Any] = {
        "id": response_id(request.id),
        "object": "response",
        "created_at": calendar.timegm(request.created_at.timetuple()),
        "status": status,
        "completed_at": None,
        "error": None,
        "incomplete_details": None,
        "model": model,
        "output": [],
        "service_tier": completion.service_tier(request),
    }
    result.update(echo(body))
    if result["user"] is None:
        del result["user"]
    return result


def response_object(request: ChatRequest, body: dict, shape: Shape) -> dict:
    """The finished response: completed, or incomplete when the reply stopped at max_output_tokens."""
    reply = request.reply or {}
    incomplete = reply.get("finish_reason") == "length"
    result = skeleton(request, body, "incomplete" if incomplete else "completed")
    result["completed_at"] = calendar.timegm((request.finished_at or utcnow()).timetuple())
    if incomplete:
        result["incomplete_details"] = {"reason": "max_output_tokens"}
    result["output"] = output_items(request, shape)
    result["usage"] = usage(request)
    result["x_horde"] = completion.x_horde(request, shape.ignored)
    return result


def partial_output(request: ChatRequest, shape: Shape) -> list[dict]:
    """What the worker had posted when its request ended early (a cancel): its reasoning (when shown) and its
    text, in progress. This is the text a cancel charges for."""
    items = []
    if shape.include_reasoning and request.progress_reasoning:
        items.append(reasoning_item(request.id, request.progress_reasoning, status="in_progress"))
    if request.progress_content:
        items.append(message_item(request.id, request.progress_content, status="in_progress"))
    return items


def cancelled_object(request: ChatRequest, body: dict, shape: Shape) -> dict:
    result = skeleton(request, body, "cancelled")
    result["output"] = partial_output(request, shape)
    result["x_horde"] = completion.x_horde(request, shape.ignored)
    return result


def failed_object(request: ChatRequest, body: dict, message: str) -> dict:
    result = skeleton(request, body, "failed")
    result["error"] = {"code": "server_error", "message": message}
    return result


def assistant_message(request: ChatRequest) -> dict:
    """The reply as a chat assistant message, for the next turn's history."""
    reply = request.reply or {}
    message: dict = {"role": "assistant", "content": reply.get("content") or None}
    if reply.get("tool_calls"):
        message["tool_calls"] = [
            {"id": call["id"], "type": "function", "function": dict(call["function"])} for call in reply["tool_calls"]
        ]
    elif message["content"] is None:
        message["content"] = ""
    return message
