"""Parameters a dialect accepts and does not act on, or lowers: named in the answer, never dropped silently.

The screening builds the list (an `Ignored` per request: the chat screening's, and each dialect's mapping
before it); this module writes it, in one place, for every dialect: the response headers
`x-horde-ignored-parameters` (comma-separated param paths) and `x-horde-lowered-parameters`
(`param=served value` pairs), and `x_horde.ignored_parameters` and `x_horde.lowered_parameters` in the body.
A token limit lowered by the screening (above the Horde's ceiling) and then by admission (above the online
workers' lengths) is one lowering, from the value sent to the value served, reported as admission reports its
own (a `worker_max_length` context adjustment). See docs/reference/chat_front.md, Named parameters.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

IGNORED_HEADER = "x-horde-ignored-parameters"
LOWERED_HEADER = "x-horde-lowered-parameters"
#: The header names at most this many paths, then how many more there are; the body lists every one.
HEADER_MAX_PATHS = 32
WORKER_MAX_LENGTH = "worker_max_length"


@dataclass
class Ignored:
    """What one request's screening accepted without acting on it, and what it lowered.

    `token_param` is the dialect's name of the completion limit, which admission may lower further.
    """

    token_param: str = "max_tokens"
    _paths: dict[str, None] = field(default_factory=dict)
    lowered: list[dict] = field(default_factory=list)

    @property
    def paths(self) -> list[str]:
        return list(self._paths)

    def add(self, path: str) -> None:
        self._paths[path] = None

    def add_keys(self, container: dict, served: Iterable[str], path: str) -> None:
        """Name each key of `container` outside `served`, as `path.key` (or `key` at the top)."""
        kept = set(served)
        for key in container:
            if key not in kept:
                self.add(f"{path}.{key}" if path else key)

    def lower(self, param: str, sent: int, served: int) -> None:
        self.lowered.append({"param": param, "from": sent, "to": served})

    def take(self, other: Ignored, rename: Callable[[str], str] = lambda path: path) -> None:
        """Add `other`'s paths and lowerings, their params renamed into this dialect's names."""
        for path in other.paths:
            self.add(rename(path))
        for lowered in other.lowered:
            self.lower(rename(lowered["param"]), lowered["from"], lowered["to"])


def lowered_parameters(ignored: Ignored, adjustments: list[dict] | None) -> list[dict]:
    """Every lowering, the token limit's from the value sent to the one admission served."""
    served = _admission_lowering(adjustments)
    out = [dict(lowered) for lowered in ignored.lowered]
    token = next((lowered for lowered in out if lowered["param"] == ignored.token_param), None)
    if token is not None and served is not None:
        token["to"] = served["to"]
    elif served is not None:
        out.insert(0, {"param": ignored.token_param, "from": served["from"], "to": served["to"]})
    return out


def context_adjustments(ignored: Ignored, adjustments: list[dict] | None) -> list[dict] | None:
    """Admission's adjustments, with a token limit the screening lowered reported from the value sent."""
    token = next((lowered for lowered in ignored.lowered if lowered["param"] == ignored.token_param), None)
    if token is None:
        return adjustments or None
    served = _admission_lowering(adjustments)
    others = [adjustment for adjustment in adjustments or () if adjustment.get("reason") != WORKER_MAX_LENGTH]
    to = served["to"] if served is not None else token["to"]
    return [{"from": token["from"], "to": to, "reason": WORKER_MAX_LENGTH}, *others]


def _admission_lowering(adjustments: list[dict] | None) -> dict | None:
    """Admission's lowering of the token limit to the online workers' largest length, if it made one."""
    return next((item for item in adjustments or () if item.get("reason") == WORKER_MAX_LENGTH), None)


def x_horde_fields(ignored: Ignored | None, adjustments: list[dict] | None) -> dict[str, Any]:
    """The x_horde keys this module owns: context_adjustments, ignored_parameters, lowered_parameters."""
    ignored = ignored or Ignored()
    return {
        "context_adjustments": context_adjustments(ignored, adjustments),
        "ignored_parameters": ignored.paths,
        "lowered_parameters": lowered_parameters(ignored, adjustments),
    }


def headers(ignored: Ignored | None, adjustments: list[dict] | None) -> dict[str, str]:
    """The response headers naming what was ignored and lowered; none when nothing was."""
    ignored = ignored or Ignored()
    return headers_of(ignored.paths, lowered_parameters(ignored, adjustments))


def headers_of(paths: list[str], lowered: list[dict]) -> dict[str, str]:
    """The headers for these paths and lowerings (a stored answer's x_horde gives them back)."""
    out = {}
    if paths:
        shown = paths[:HEADER_MAX_PATHS]
        more = len(paths) - len(shown)
        out[IGNORED_HEADER] = ", ".join(shown) + (f", +{more} more" if more else "")
    if lowered:
        out[LOWERED_HEADER] = ", ".join(f"{item['param']}={item['to']}" for item in lowered)
    return out


def stored_headers(body: dict) -> dict[str, str]:
    """The headers of an answer kept with its x_horde (a stored response)."""
    x_horde = body.get("x_horde") or {}
    return headers_of(list(x_horde.get("ignored_parameters") or []), list(x_horde.get("lowered_parameters") or []))
