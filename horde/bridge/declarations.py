"""What a worker tells the Horde on every pop: models, limits, features and guarantees.

The names and bounds are the worker protocol's (horde/protocol.py, which the server reads too). A worker
declares only what its backend really does; the Horde routes requests by these declarations.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from horde import protocol
from horde.bridge import BRIDGE_AGENT


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
        if not 1 <= len(self.name) <= protocol.NAME_MAX_CHARS:
            raise ValueError(f"the worker name must have 1 to {protocol.NAME_MAX_CHARS} characters")
        if not 1 <= len(self.models) <= protocol.MODELS_MAX:
            raise ValueError(f"a worker serves 1 to {protocol.MODELS_MAX} models")
        if not protocol.MAX_LENGTH_MIN_TOKENS <= self.max_length <= protocol.MAX_LENGTH_MAX_TOKENS:
            raise ValueError(
                f"max_length must be {protocol.MAX_LENGTH_MIN_TOKENS} to {protocol.MAX_LENGTH_MAX_TOKENS} tokens"
            )
        if self.max_context_length < max(self.max_length, protocol.MAX_CONTEXT_LENGTH_MIN_TOKENS):
            raise ValueError(
                f"max_context_length must be at least max_length and {protocol.MAX_CONTEXT_LENGTH_MIN_TOKENS}"
            )
        if self.max_context_length > protocol.MAX_CONTEXT_LENGTH_MAX_TOKENS:
            raise ValueError(f"max_context_length must be at most {protocol.MAX_CONTEXT_LENGTH_MAX_TOKENS}")
        if not protocol.THREADS_MIN <= self.threads <= protocol.THREADS_MAX:
            raise ValueError(f"threads must be {protocol.THREADS_MIN} to {protocol.THREADS_MAX}")
        check_names(self.features, protocol.FEATURES, "feature")
        check_names(self.guarantees, protocol.GUARANTEES, "guarantee")

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
