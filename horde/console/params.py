"""The console's query parameters: whole numbers within bounds, or a 400 naming the parameter."""

from __future__ import annotations

from collections.abc import Mapping

from horde import errors

#: The longest digits a bounded parameter may have: past it, it is out of every bound anyway.
MAX_DIGITS = 9


def bounded(args: Mapping[str, str], name: str, default: int, low: int, high: int) -> int:
    """The query parameter `name` of `args` (absent: `default`) as a whole number from `low` to `high`."""
    raw = args.get(name)
    if raw is None or raw == "":
        return default
    if not (raw.isascii() and raw.isdecimal()) or len(raw) > MAX_DIGITS or not low <= int(raw) <= high:
        raise errors.BadRequest(f"Invalid '{name}': a whole number from {low} to {high}.", param=name)
    return int(raw)
