"""A Messages body's `thinking` and `output_config`, as the chat contract's reasoning_effort and response_format.

- `thinking: {type: "enabled", budget_tokens}` (at least 1024): thinking on; the effort comes from the budget
  sent (low below 4096, medium below 16384, high above). A budget not below `max_tokens` (as lowered to the
  Horde's ceiling) is lowered to one below it and named, as Anthropic requires the budget below max_tokens.
- `thinking: {type: "adaptive"}` (Claude Code's default): thinking on, the worker decides how much; no effort
  unless `output_config.effort` says one.
- `thinking.display`: `summarized` (the default) returns the thinking blocks, `omitted` returns none.
- `output_config.effort`: `low`, `medium`, `high`, `xhigh` are the same reasoning_effort, `max` is `xhigh` (the
  contract's highest); it wins over a budget's effort.
- `output_config.format: {type: "json_schema", schema}`: a json_schema response_format named `output`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from horde.oai.ignored import Ignored
from horde.oai.screening.base import BAD_REQUEST, ScreeningError, is_int, require_object

THINKING_TYPES = ("enabled", "adaptive", "disabled")
THINKING_KEYS = {
    "enabled": ("type", "budget_tokens", "display"),
    "adaptive": ("type", "display"),
    "disabled": ("type",),
}
DISPLAYS = ("summarized", "omitted")
#: thinking.budget_tokens -> reasoning_effort: below the first bound low, below the second medium, else high.
EFFORT_BOUNDS_TOKENS = (4096, 16384)
THINKING_BUDGET_MIN_TOKENS = 1024
OUTPUT_EFFORTS = {"low": "low", "medium": "medium", "high": "high", "xhigh": "xhigh", "max": "xhigh"}
OUTPUT_CONFIG_KEYS = ("effort", "format")
FORMAT_NAME = "output"


@dataclass(frozen=True)
class Thinking:
    on: bool = False
    #: Whether thinking blocks come back (display is not `omitted`).
    shown: bool = True
    effort: str | None = None


def screen_thinking(value: Any, max_tokens: Any, ignored: Ignored) -> Thinking:
    if value is None:
        return Thinking()
    thinking = require_object(value, "thinking")
    kind = thinking.get("type")
    if kind not in THINKING_TYPES:
        raise ScreeningError(
            "thinking.type: Input should be 'enabled', 'adaptive' or 'disabled'",
            code=BAD_REQUEST,
            param="thinking.type",
        )
    for key in thinking:
        if key not in THINKING_KEYS[kind]:
            raise ScreeningError(f"thinking.{key}: Extra inputs are not permitted", param=f"thinking.{key}")
    if kind == "disabled":
        return Thinking()
    display = thinking.get("display")
    if display is not None and display not in DISPLAYS:
        raise ScreeningError(
            "thinking.display: Input should be 'summarized' or 'omitted'", code=BAD_REQUEST, param="thinking.display"
        )
    shown = display != "omitted"
    if kind == "adaptive":
        return Thinking(on=True, shown=shown)
    return Thinking(on=True, shown=shown, effort=_budget_effort(thinking.get("budget_tokens"), max_tokens, ignored))


def _budget_effort(budget: Any, max_tokens: Any, ignored: Ignored) -> str:
    if not is_int(budget) or budget < THINKING_BUDGET_MIN_TOKENS:
        raise ScreeningError(
            f"thinking.budget_tokens: Input should be an integer of at least {THINKING_BUDGET_MIN_TOKENS}",
            code=BAD_REQUEST,
            param="thinking.budget_tokens",
        )
    if is_int(max_tokens) and budget >= max_tokens > THINKING_BUDGET_MIN_TOKENS:
        ignored.lower("thinking.budget_tokens", budget, max_tokens - 1)
    low, medium = EFFORT_BOUNDS_TOKENS
    return "low" if budget < low else "medium" if budget < medium else "high"


def screen_output_config(value: Any) -> dict:
    """The chat keys of `output_config`: reasoning_effort, response_format."""
    config = require_object(value, "output_config")
    for key in config:
        if key not in OUTPUT_CONFIG_KEYS:
            raise ScreeningError(f"output_config.{key}: Extra inputs are not permitted", param=f"output_config.{key}")
    chat: dict[str, Any] = {}
    effort = config.get("effort")
    if effort is not None:
        if not isinstance(effort, str) or effort not in OUTPUT_EFFORTS:
            raise ScreeningError(
                f"output_config.effort: Input should be {', '.join(repr(name) for name in OUTPUT_EFFORTS)}",
                code=BAD_REQUEST,
                param="output_config.effort",
            )
        chat["reasoning_effort"] = OUTPUT_EFFORTS[effort]
    if config.get("format") is not None:
        output_format = require_object(config["format"], "output_config.format")
        for key in output_format:
            if key not in ("type", "schema"):
                raise ScreeningError(
                    f"output_config.format.{key}: Extra inputs are not permitted", param=f"output_config.format.{key}"
                )
        if output_format.get("type") != "json_schema":
            raise ScreeningError(
                "output_config.format.type: Input should be 'json_schema'",
                code=BAD_REQUEST,
                param="output_config.format.type",
            )
        if "schema" not in output_format:
            raise ScreeningError(
                "output_config.format.schema: Field required", code=BAD_REQUEST, param="output_config.format.schema"
            )
        chat["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": FORMAT_NAME, "schema": output_format["schema"]},
        }
    return chat
