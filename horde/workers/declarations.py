"""What a worker declared (features it acts on, guarantees it enforces; horde/protocol.py names them), as the
server stores it: bit masks, so that eligibility is one SQL expression: a request is eligible when
`required & ~declared == 0`.
"""

from __future__ import annotations

from collections.abc import Iterable

from horde.protocol import FEATURES, GUARANTEES

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
