"""OpenAI response objects built from a finished Horde request."""

from __future__ import annotations

import calendar
import hashlib

from horde.chat.models import ChatRequest
from horde.chat.tiers import DEFAULT as DEFAULT_TIER
from horde.chat.tokens import text_tokens
from horde.oai import ignored as named
from horde.oai.ignored import Ignored

FINGERPRINT_HEX_CHARS = 12


def completion_id(request: ChatRequest) -> str:
    return "chatcmpl-" + request.id.replace("-", "")


def created_epoch(request: ChatRequest) -> int:
    return calendar.timegm(request.created_at.timetuple())


def system_fingerprint(worker_id: str | None, model: str | None) -> str | None:
    """A short hash of the serving worker and model; null without a worker."""
    if not worker_id:
        return None
    digest = hashlib.sha256(f"{worker_id}\n{model}".encode()).hexdigest()
    return "fp_" + digest[:FINGERPRINT_HEX_CHARS]


def service_tier(request: ChatRequest) -> str:
    """The tier that served the request, as OpenAI answers it: "default", or "flex" (horde/chat/tiers.py)."""
    return request.service_tier or DEFAULT_TIER


def finish_reason(request: ChatRequest) -> str:
    reply = request.reply or {}
    if reply.get("tool_calls"):
        forced = isinstance(request.payload.get("tool_choice"), dict)
        return "stop" if forced else "tool_calls"
    return "length" if reply.get("finish_reason") == "length" else "stop"


def tool_calls(reply: dict) -> list[dict] | None:
    calls = reply.get("tool_calls") or []
    if not calls:
        return None
    return [
        {
            "id": call["id"],
            "type": "function",
            "function": {"name": call["function"]["name"], "arguments": call["function"]["arguments"]},
        }
        for call in calls
    ]


def usage(request: ChatRequest) -> dict:
    reply = request.reply or {}
    counted = reply.get("usage") or {}
    prompt = counted.get("prompt_tokens", request.prompt_tokens)
    completion = counted.get("completion_tokens", 0)
    reasoning = counted.get("reasoning_tokens")
    if reasoning is None:
        reasoning = min(completion, text_tokens(reply.get("reasoning_content")))
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": cached_tokens(request)},
        "completion_tokens_details": {"reasoning_tokens": reasoning},
    }


def cached_tokens(request: ChatRequest) -> int:
    """The prompt tokens the worker's backend read from its cache, as the worker reported them (0 unreported)."""
    return ((request.reply or {}).get("usage") or {}).get("cached_tokens") or 0


def x_horde(request: ChatRequest, ignored: Ignored | None = None) -> dict:
    """The Horde's extension of every dialect's answer; `ignored` is what the screening named."""
    return {
        "request_id": request.id,
        "worker_id": request.worker_id,
        "worker_name": request.worker_name,
        "model": request.served_model,
        "kudos": request.kudos_charged,
        **named.x_horde_fields(ignored, request.context_adjustments),
    }


def message(request: ChatRequest, include_reasoning: bool) -> dict:
    reply = request.reply or {}
    calls = tool_calls(reply)
    result = {
        "role": "assistant",
        "content": reply.get("content") if reply.get("content") or not calls else None,
        "refusal": None,
    }
    if result["content"] is None and not calls:
        result["content"] = ""
    if calls:
        result["tool_calls"] = calls
    if include_reasoning and reply.get("reasoning_content"):
        result["reasoning_content"] = reply["reasoning_content"]
    return result


def chat_completion(request: ChatRequest, include_reasoning: bool = True, ignored: Ignored | None = None) -> dict:
    body = {
        "id": completion_id(request),
        "object": "chat.completion",
        "created": created_epoch(request),
        "model": request.served_model,
        "choices": [
            {
                "index": 0,
                "message": message(request, include_reasoning),
                "finish_reason": finish_reason(request),
                "native_finish_reason": (request.reply or {}).get("finish_reason"),
                "logprobs": None,
            }
        ],
        "usage": usage(request),
        "service_tier": service_tier(request),
        "system_fingerprint": system_fingerprint(request.worker_id, request.served_model),
        "x_horde": x_horde(request, ignored),
    }
    if body["system_fingerprint"] is None:  # OpenAI's schema has it as an optional string, never null
        del body["system_fingerprint"]
    return body
