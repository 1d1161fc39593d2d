"""What a request needs from a worker, exactly as docs/decisions/0001-route-by-declared-support.md lists it.

Features: seed when set, reasoning_effort when set, each penalty that is not 0,
vision for an image part, tools when tools are forwarded, json_object or
json_schema by the response format, tools_with_response_format when both are
forwarded. Guarantees, under strict conformance only: tool_choice for
"required" or a forced function, schema_adherence for a strict json_schema,
prompt_fit when the client asked that no message be dropped (context_fitting
"reject").
"""

from __future__ import annotations

from dataclasses import dataclass

from horde.chat.tokens import count_images
from horde.http.contract import DEFAULT_CONFORMANCE
from horde.workers.declarations import feature_names, features_mask, guarantee_names, guarantees_mask


@dataclass(frozen=True)
class Requirements:
    features: int
    guarantees: int

    @property
    def names(self) -> list[str]:
        return feature_names(self.features) + guarantee_names(self.guarantees)


def derive(native: dict) -> Requirements:
    features = []
    if native.get("seed") is not None:
        features.append("seed")
    if native.get("reasoning_effort") is not None:
        features.append("reasoning_effort")
    for penalty in ("frequency_penalty", "presence_penalty"):
        if native.get(penalty):
            features.append(penalty)
    if any(count_images(message.get("content")) for message in native["messages"]):
        features.append("vision")
    tools = forwards_tools(native)
    response_type = (native.get("response_format") or {}).get("type")
    if tools:
        features.append("tools")
    if response_type in ("json_object", "json_schema"):
        features.append(response_type)
        if tools:
            features.append("tools_with_response_format")
    guarantees = []
    if native.get("conformance", DEFAULT_CONFORMANCE) == DEFAULT_CONFORMANCE:
        if tools and (native.get("tool_choice") == "required" or isinstance(native.get("tool_choice"), dict)):
            guarantees.append("tool_choice")
        if response_type == "json_schema" and (native["response_format"].get("json_schema") or {}).get("strict"):
            guarantees.append("schema_adherence")
        if native.get("context_fitting") == "reject":
            guarantees.append("prompt_fit")
    return Requirements(features_mask(features), guarantees_mask(guarantees))


def forwards_tools(native: dict) -> bool:
    """Tools reach the worker unless tool_choice is "none", which sends no definitions."""
    return bool(native.get("tools")) and native.get("tool_choice") != "none"
