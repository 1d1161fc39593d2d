"""Service tiers: interactive requests, and flex ones that are cheaper and wait behind them.

A flex request (`service_tier: "flex"` on /v1/chat/completions and /v1/responses, and every line of a batch) waits
behind every interactive request of its priority class, and among flex requests by kudos, then age, as every
request does; its requester pays HORDE_BATCH_PRICE_FACTOR of the price (rounded up), while its worker earns the
price, as for any job (docs/reference/batches.md).

Why behind the whole class, not only behind interactive requests of the very same balance: a request's priority is
its requester's balance at admission, and a batch's own charges lower that balance line after line, so a tie-break at
equal balances would put a user's batch ahead of the user's own interactive requests admitted later. The tier joins
the queue's one ordering through the priority value alone (request_rows.PRIORITY_FROM_BALANCE): a flex request's
priority is its balance (held to MAX_PRIORITY) less FLEX_PRIORITY_OFFSET, below every interactive priority, and the
queue's statements and indexes stay as they are.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

DEFAULT, FLEX = "default", "flex"
SERVICE_TIERS = (DEFAULT, FLEX)
#: A request's priority is its caller's balance held within a 32-bit column: a balance is 64-bit, and every balance
#: above this queues as this one does.
MAX_PRIORITY = 2**31 - 1
#: A flex request's priority is its priority as an interactive one's less this: at most 0, and at least -OFFSET; an
#: interactive request's priority is at least 0.
FLEX_PRIORITY_OFFSET = MAX_PRIORITY
#: The rate scope of batch lines: they are counted apart from their user's interactive calls (horde/accounts/
#: rate_limit.py counts a caller by user and scope), so that a running batch never takes its user's budget; a batch
#: is bounded by the lines it keeps in flight instead (horde/batches/).
BATCH_RATE_SCOPE = "batch"
#: The rate limit of batch lines' scope: none in practice (the batch's lines in flight bound it).
BATCH_RATE_LIMIT = 2**31 - 1


@dataclass(frozen=True)
class Tier:
    """How a request is admitted and charged."""

    name: str = DEFAULT
    #: Whether the free allowance applies (an idle pool serves short requests without kudos upfront); batch lines
    #: always need their estimate upfront, so that a user who runs out of kudos sees the rest of the batch refused.
    free_allowance: bool = True
    #: Counted on a rate scope of its own (BATCH_RATE_SCOPE), instead of the caller's interactive budget.
    rate_scope: str | None = None

    @property
    def flex(self) -> bool:
        return self.name == FLEX


INTERACTIVE = Tier()
FLEX_INTERACTIVE = Tier(FLEX)
BATCH_LINE = Tier(FLEX, free_allowance=False, rate_scope=BATCH_RATE_SCOPE)


def named(service_tier: str) -> Tier:
    """The tier of a screened `service_tier` ("default" or "flex")."""
    return FLEX_INTERACTIVE if service_tier == FLEX else INTERACTIVE


def requester_price(kudos: int, service_tier: str, flex_factor: float) -> int:
    """What the requester pays of a price: a flex request pays `flex_factor` of it, rounded up (so a factor of 1 is
    the price itself); an interactive request pays the price."""
    if service_tier != FLEX:
        return kudos
    return math.ceil(kudos * flex_factor)
