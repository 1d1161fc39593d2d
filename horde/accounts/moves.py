"""What a kudos move changes on its user's row: the balance, and the running totals the AI Horde's user details
show (kudos_details by kind, records of generations and tokens), added by the same statement.

Pure: horde/accounts/service.py and transfers.py bind these deltas into their UPDATEs.
"""

from __future__ import annotations

import math
from enum import StrEnum
from typing import NamedTuple


class Kind(StrEnum):
    """A ledger entry's kind: why kudos moved."""

    GRANT = "grant"  # the operator gave kudos (python -m horde users create --kudos)
    ADJUSTMENT = "adjustment"  # the operator set a balance (python -m horde users kudos)
    CHARGE = "charge"  # a requester paid for a generation
    REWARD = "reward"  # a worker's owner earned it
    GIFTED = "gifted"  # a user sent kudos to another (POST /kudos/transfer), negative
    RECEIVED = "received"  # ... and the other received them
    AWARD = "awarded"  # a moderator awarded kudos (POST /kudos/award)


class Move(NamedTuple):
    """`amount` kudos added to `user_id`'s balance (negative: taken), for a reason (`kind`); a charge or a reward
    also counts a generation of `tokens` tokens in the user's records."""

    user_id: int
    amount: int
    kind: str
    tokens: int = 0


#: The users' columns a move adds to besides the balance (`kudos`), in a fixed order.
TOTALS = (
    "kudos_accumulated",
    "kudos_gifted",
    "kudos_received",
    "kudos_admin",
    "kudos_awarded",
    "requested_generations",
    "requested_tokens",
    "fulfilled_generations",
    "fulfilled_tokens",
)
#: The total of kudos_details each kind adds its amount to.
_KUDOS_TOTAL = {
    Kind.GRANT: "kudos_admin",
    Kind.ADJUSTMENT: "kudos_admin",
    Kind.CHARGE: "kudos_accumulated",
    Kind.REWARD: "kudos_accumulated",
    Kind.GIFTED: "kudos_gifted",
    Kind.RECEIVED: "kudos_received",
    Kind.AWARD: "kudos_awarded",
}
#: A charge counts a generation the user requested, a reward one its workers fulfilled.
_RECORDS = {
    Kind.CHARGE: ("requested_generations", "requested_tokens"),
    Kind.REWARD: ("fulfilled_generations", "fulfilled_tokens"),
}


def deltas(move: Move | tuple) -> dict[str, int]:
    """What `move` adds to each column of its user's row: `kudos` and every one of TOTALS."""
    move = Move(*move)
    added = dict.fromkeys(("kudos", *TOTALS), 0)
    added["kudos"] = move.amount
    added[_KUDOS_TOTAL[Kind(move.kind)]] = move.amount
    if move.kind in _RECORDS:
        generations, tokens = _RECORDS[Kind(move.kind)]
        added[generations], added[tokens] = 1, move.tokens
    return added


def net_by_user(moves: list[Move] | list[tuple]) -> dict[int, dict[str, int]]:
    """The deltas of `moves` summed per user, users in id order: a statement changes each user's row once."""
    net: dict[int, dict[str, int]] = {}
    for move in sorted(Move(*move) for move in moves):
        added = deltas(move)
        into = net.setdefault(move.user_id, dict.fromkeys(added, 0))
        for column, value in added.items():
            into[column] += value
    return net


def multiplied(price: int, multiplier: float) -> int:
    """What a requester pays for a generation of `price` kudos under its usage multiplier (PUT /users/{id}): the
    price times the multiplier, rounded half up; its worker's owner earns the price."""
    if multiplier == 1.0:
        return price
    return math.floor(price * multiplier + 0.5)
