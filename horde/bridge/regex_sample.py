"""One short string that matches a regular expression, for JSON schema `pattern`s.

Walks Python's own parse of the pattern and takes the shortest choice at each
step: the first branch, the minimum repeat, the first character of a class.
Good enough for the patterns found in tool and response schemas (dates, codes,
identifiers); a pattern it cannot sample gives None and the caller falls back.
"""

from __future__ import annotations

import re

try:  # Python 3.11+ keeps the parser here; older versions call it sre_parse.
    from re import _constants as sre_constants  # type: ignore[attr-defined]
    from re import _parser as sre_parse  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover
    import sre_constants
    import sre_parse

_C = sre_constants
_CATEGORY_CHARS = {
    _C.CATEGORY_DIGIT: "0",
    _C.CATEGORY_NOT_DIGIT: "a",
    _C.CATEGORY_SPACE: " ",
    _C.CATEGORY_NOT_SPACE: "a",
    _C.CATEGORY_WORD: "a",
    _C.CATEGORY_NOT_WORD: "-",
}
_PREFERRED_CHARS = "a0A-_ .x1"
_REPEATS = tuple(op for op in (_C.MAX_REPEAT, _C.MIN_REPEAT, getattr(_C, "POSSESSIVE_REPEAT", None)) if op)
#: An unbounded repeat with a minimum of 0 still yields this many, so `.*`-only
#: patterns such as `^.*$` give a non-empty, more natural sample.
MAX_REPEAT_SAMPLE = 1


def sample(pattern: str) -> str | None:
    """A string matching `pattern` under `re.search`, or None."""
    try:
        parsed = sre_parse.parse(pattern)
        text = _walk(parsed)
    except Exception:
        return None
    try:
        return text if re.search(pattern, text) else None
    except re.error:
        return None


def _walk(items) -> str:
    return "".join(_item(op, av) for op, av in items)


def _item(op, av) -> str:
    if op is _C.LITERAL:
        return chr(av)
    if op is _C.NOT_LITERAL:
        return "a" if chr(av) != "a" else "b"
    if op is _C.ANY:
        return "a"
    if op is _C.IN:
        return _from_class(av)
    if op in _REPEATS:
        low, high, sub = av
        count = low if low > 0 else min(MAX_REPEAT_SAMPLE, high)
        return "".join(_walk(sub) for _ in range(count))
    if op is _C.SUBPATTERN:
        return _walk(av[-1])
    if op is getattr(_C, "ATOMIC_GROUP", None):
        return _walk(av)
    if op is _C.BRANCH:
        return _walk(av[1][0])
    if op is _C.AT:
        return ""
    if op is _C.CATEGORY:
        return _CATEGORY_CHARS.get(av, "a")
    if op in (_C.ASSERT, _C.ASSERT_NOT):
        return ""
    raise ValueError(f"cannot sample {op}")


def _from_class(items) -> str:
    """A character in a `[...]` class: a preferred one if the class takes it."""
    if items and items[0][0] is _C.NEGATE:
        excluded = _class_chars(items[1:])
        return next(c for c in _PREFERRED_CHARS + "bcdefgh" if c not in excluded)
    allowed = _class_chars(items)
    for c in _PREFERRED_CHARS:
        if c in allowed:
            return c
    return min(allowed) if allowed else "a"


def _class_chars(items) -> set[str]:
    chars: set[str] = set()
    for op, av in items:
        if op is _C.LITERAL:
            chars.add(chr(av))
        elif op is _C.RANGE:
            low, high = av
            chars.update(chr(c) for c in range(low, min(high, low + 255) + 1))
        elif op is _C.CATEGORY:
            chars.add(_CATEGORY_CHARS.get(av, "a"))
    return chars
