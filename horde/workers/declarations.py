"""What a worker may declare: features it acts on and guarantees it enforces.

Both are stored as bit masks so that eligibility is one SQL expression:
a request is eligible when `required & ~declared == 0`.
"""

from __future__ import annotations

from collections.abc import Iterable

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

FEATURE_BITS = {name: 1 << index for index, name in enumerate(FEATURES)}
GUARANTEE_BITS = {name: 1 << index for index, name in enumerate(GUARANTEES)}
ALL_FEATURES_MASK = (1 << len(FEATURES)) - 1
ALL_GUARANTEES_MASK = (1 << len(GUARANTEES)) - 1


def features_mask(names: Iterable[str]) -> int:
    return _mask(names, FEATURE_BITS)


def guarantees_mask(names: Iterable[str]) -> int:
    return _mask(names, GUARANTEE_BITS)


def _mask(names, bits) -> int:
    mask = 0
    for name in names or ():
        mask |= bits[name]
    return mask


def feature_names(mask: int) -> list[str]:
    return [name for name, bit in FEATURE_BITS.items() if mask & bit]


def guarantee_names(mask: int) -> list[str]:
    return [name for name, bit in GUARANTEE_BITS.items() if mask & bit]
