"""The model card of /v1/models: maxima and unions across a model's online workers."""

from __future__ import annotations

from collections.abc import Iterable

BASE_PARAMETERS = ("max_tokens", "max_completion_tokens", "temperature", "top_p", "stop", "n", "stream",
                   "stream_options", "user")
PARAMETERS_BY_DECLARATION = {
    "tools": ("tools", "parallel_tool_calls"),
    "tool_choice": ("tool_choice",),
    "json_object": ("response_format",),
    "json_schema": ("response_format", "structured_outputs"),
    "seed": ("seed",),
    "frequency_penalty": ("frequency_penalty",),
    "presence_penalty": ("presence_penalty",),
    "reasoning_effort": ("reasoning_effort",),
}
CREATED_EPOCH = 0
OWNER = "horde"


def supported_parameters(features: Iterable[str], guarantees: Iterable[str]) -> list[str]:
    names = list(BASE_PARAMETERS)
    for declaration in list(features) + list(guarantees):
        for name in PARAMETERS_BY_DECLARATION.get(declaration, ()):
            if name not in names:
                names.append(name)
    return sorted(names)


def card(stats: dict) -> dict:
    modalities = ["text", "image"] if "vision" in stats["features"] else ["text"]
    return {
        "id": stats["name"], "object": "model", "created": CREATED_EPOCH, "owned_by": OWNER, "name": stats["name"],
        "context_length": stats["max_context_length"],
        "top_provider": {"context_length": stats["max_context_length"],
                         "max_completion_tokens": stats["max_length"], "is_moderated": False},
        "supported_parameters": supported_parameters(stats["features"], stats["guarantees"]),
        "architecture": {"input_modalities": modalities, "output_modalities": ["text"]},
        "x_horde": {key: stats[key] for key in ("workers", "threads", "queued", "estimated_wait", "features",
                                                "guarantees", "max_temperature_with_tools")},
    }


def model_list(all_stats: list[dict]) -> dict:
    return {"object": "list", "data": [card(stats) for stats in all_stats]}
