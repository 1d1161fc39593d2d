"""The model card of /v1/models: maxima and unions across a model's online workers."""

from __future__ import annotations

from collections.abc import Iterable

BASE_PARAMETERS = (
    "max_tokens",
    "max_completion_tokens",
    "temperature",
    "top_p",
    "stop",
    "n",
    "stream",
    "stream_options",
    "user",
)
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
#: What /v1/completions reads (horde/oai/screening/completions.py), for models only text workers serve.
TEXT_PARAMETERS = ("max_tokens", "n", "seed", "stop", "stream", "stream_options", "temperature", "top_p", "user")
CHAT_ENDPOINT, TEXT_ENDPOINT = "chat.completions", "completions"
CREATED_EPOCH = 0
OWNER = "horde"


def supported_parameters(features: Iterable[str], guarantees: Iterable[str]) -> list[str]:
    names = list(BASE_PARAMETERS)
    for declaration in list(features) + list(guarantees):
        for name in PARAMETERS_BY_DECLARATION.get(declaration, ()):
            if name not in names:
                names.append(name)
    return sorted(names)


def card(stats: dict, endpoints: tuple[str, ...] = (CHAT_ENDPOINT,)) -> dict:
    modalities = ["text", "image"] if "vision" in stats["features"] else ["text"]
    return {
        "id": stats["name"],
        "object": "model",
        "created": CREATED_EPOCH,
        "owned_by": OWNER,
        "name": stats["name"],
        "context_length": stats["max_context_length"],
        "top_provider": {
            "context_length": stats["max_context_length"],
            "max_completion_tokens": stats["max_length"],
            "is_moderated": False,
        },
        "supported_parameters": (
            supported_parameters(stats["features"], stats["guarantees"])
            if CHAT_ENDPOINT in endpoints
            else list(TEXT_PARAMETERS)
        ),
        "architecture": {"input_modalities": modalities, "output_modalities": ["text"]},
        "x_horde": {
            key: stats[key]
            for key in (
                "workers",
                "threads",
                "queued",
                "estimated_wait",
                "features",
                "guarantees",
                "max_temperature_with_tools",
            )
        }
        | {"endpoints": list(endpoints)},
    }


def text_stats_as_chat(entry: dict) -> dict:
    """A text model's status (horde/text/stats.py) in the shape `card` reads: text workers declare no features."""
    return {
        "name": entry["name"],
        "max_context_length": entry["max_context_length"],
        "max_length": entry["max_length"],
        "workers": entry["count"],
        "threads": entry["threads"],
        "queued": entry["jobs"],
        "estimated_wait": entry["eta"],
        "features": [],
        "guarantees": [],
        "max_temperature_with_tools": None,
    }


def cards(chat_stats: list[dict], text_stats: list[dict]) -> list[dict]:
    """One card per model: chat's when chat workers serve it, else the text workers'.

    `x_horde.endpoints` says which endpoints serve it."""
    text_names = {entry["name"] for entry in text_stats}
    chat_names = {stats["name"] for stats in chat_stats}
    result = [
        card(stats, (CHAT_ENDPOINT, TEXT_ENDPOINT) if stats["name"] in text_names else (CHAT_ENDPOINT,))
        for stats in chat_stats
    ]
    result += [
        card(text_stats_as_chat(entry), (TEXT_ENDPOINT,)) for entry in text_stats if entry["name"] not in chat_names
    ]
    return sorted(result, key=lambda item: item["id"])


def model_list(chat_stats: list[dict], text_stats: list[dict] | None = None) -> dict:
    return {"object": "list", "data": cards(chat_stats, text_stats or [])}
