"""What a worker tells the Horde on every pop: models, limits, features and guarantees.

The names are the native contract's (docs/reference/chat_requests.md). A worker declares
only what its backend really does; the Horde routes requests by these declarations.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from horde.bridge import BRIDGE_AGENT

FEATURES = (
    "tools",
    "json_object",
    "json_schema",
    "tools_with_response_format",
    "vision",
    "seed",
    "frequency_penalty",
    "presence_penalty",
    "reasoning_effort",
    "progress",
)
GUARANTEES = ("tool_choice", "schema_adherence", "prompt_fit")

MAX_LENGTH_MIN_TOKENS = 16
MAX_LENGTH_MAX_TOKENS = 16384
THREADS_MIN = 1
THREADS_MAX = 50
POP_WAIT_MAX_S = 30
MODELS_MAX = 100
NAME_MAX_CHARS = 100


@dataclass
class Declarations:
    """The declaration part of a pop body, re-sent on every pop."""

    name: str
    models: list[str]
    max_length: int
    max_context_length: int
    threads: int = 1
    features: list[str] = field(default_factory=list)
    guarantees: list[str] = field(default_factory=list)
    limits: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Refuse at start what the Horde would refuse on every pop."""
        if not 1 <= len(self.name) <= NAME_MAX_CHARS:
            raise ValueError(f"the worker name must have 1 to {NAME_MAX_CHARS} characters")
        if not 1 <= len(self.models) <= MODELS_MAX:
            raise ValueError(f"a worker serves 1 to {MODELS_MAX} models")
        if not MAX_LENGTH_MIN_TOKENS <= self.max_length <= MAX_LENGTH_MAX_TOKENS:
            raise ValueError(f"max_length must be {MAX_LENGTH_MIN_TOKENS} to {MAX_LENGTH_MAX_TOKENS} tokens")
        if self.max_context_length < self.max_length:
            raise ValueError("max_context_length must be at least max_length")
        if not THREADS_MIN <= self.threads <= THREADS_MAX:
            raise ValueError(f"threads must be {THREADS_MIN} to {THREADS_MAX}")
        check_names(self.features, FEATURES, "feature")
        check_names(self.guarantees, GUARANTEES, "guarantee")

    def pop_body(self, wait_s: float) -> dict:
        return {
            "name": self.name,
            "models": list(self.models),
            "max_length": self.max_length,
            "max_context_length": self.max_context_length,
            "threads": self.threads,
            "features": list(self.features),
            "guarantees": list(self.guarantees),
            "limits": dict(self.limits),
            "bridge_agent": BRIDGE_AGENT,
            "wait": wait_s,
        }


def check_names(names: list[str], allowed: tuple[str, ...], what: str) -> None:
    unknown = [n for n in names if n not in allowed]
    if unknown:
        raise ValueError(f"unknown {what}(s) {', '.join(unknown)}; known: {', '.join(allowed)}")


def parse_name_list(text: str | None, allowed: tuple[str, ...], what: str) -> list[str] | None:
    """`"a,b"` → `["a", "b"]` in canonical order; None when the flag was not given."""
    if text is None:
        return None
    names = [n.strip() for n in text.split(",") if n.strip()]
    check_names(names, allowed, what)
    return [n for n in allowed if n in names]


def narrow(probed: list[str], given: list[str] | None) -> list[str]:
    """An operator narrows a probed declaration; it can never add to it."""
    if given is None:
        return list(probed)
    return [n for n in probed if n in given]
