"""A worker's reply as its submit judges and bills it: whether it keeps the request's contract, the usage it is
billed for, its price, and the kudos that price moves. Pure functions of the reply and the request's terms; the
submit (horde/chat/lifecycle.py) writes what they decide."""

from __future__ import annotations

from typing import Any, NamedTuple

from horde.accounts.moves import Kind, Move, multiplied
from horde.chat import conformance, pricing, tiers
from horde.config import Settings

#: The keys of a submit's body that make its reply, as stored on the request.
REPLY_KEYS = ("content", "reasoning_content", "tool_calls", "finish_reason", "usage")


def reply_of(body: dict) -> dict:
    return {key: body.get(key) for key in REPLY_KEYS}


def violation(request: Any, reply: dict) -> str | None:
    """Why the reply breaks the request's contract (strictly when the request required guarantees), or None."""
    return conformance.violation(request.payload, reply, strict=bool(request.required_guarantees))


def price(settings: Settings, request: Any, reply: dict) -> Amounts:
    """Bill the reply (its usage and finish reason completed in place) and price it (pricing.charge): what its
    requester pays and its worker earns (amounts)."""
    usage = dict(reply.get("usage") or {})
    usage.setdefault("prompt_tokens", request.prompt_tokens)
    charged = pricing.charge(
        request.job_model,
        reported=usage.get("completion_tokens"),
        reply=reply,
        max_tokens=request.max_tokens,
        prompt_tokens=request.prompt_tokens,
        n_images=request.n_images,
        reference_path=settings.model_reference_path,
    )
    usage["completion_tokens"] = charged.completion_tokens
    if usage.get("reasoning_tokens") is not None:
        usage["reasoning_tokens"] = min(usage["reasoning_tokens"], charged.completion_tokens)
    if usage.get("cached_tokens") is not None:  # the worker's cache report: never more than the prompt
        usage["cached_tokens"] = min(usage["cached_tokens"], usage["prompt_tokens"])
    reply["usage"] = usage
    reply["finish_reason"] = reply.get("finish_reason") or "stop"
    return amounts(settings, request, charged.kudos)


class Amounts(NamedTuple):
    """What one generation moves: the requester's charge and the worker's reward."""

    charge: int
    reward: int


def amounts(settings: Settings, request: Any, kudos: int) -> Amounts:
    """The charge and the reward of work priced `kudos`. The worker earns the price; the requester pays its tier's
    share of it (a flex request HORDE_BATCH_PRICE_FACTOR of it: horde/chat/tiers.py) times the usage multiplier it was
    admitted with (PUT /users/{id}). A shared key's cap (within_shared_key) bounds what the key pays, and the reward of
    an interactive request with it (a flex one's worker earns the price, as for any job)."""
    paid = tiers.requester_price(kudos, request.service_tier, settings.batch_price_factor)
    charge = within_shared_key(request, multiplied(paid, getattr(request, "usage_multiplier", None) or 1.0))
    return Amounts(charge, kudos if request.service_tier == tiers.FLEX else within_shared_key(request, kudos))


def within_shared_key(request: Any, kudos: int) -> int:
    """A request paid with a shared key costs at most the estimate its admission reserved of the key (priced with
    its first model: a larger one of its models may serve it); so the key's limit holds (accounts/shared_keys.py)."""
    return min(kudos, request.kudos_estimate) if request.shared_key_id else kudos


def moves(request: Any, owner_id: int, moved: Amounts, tokens: int) -> list[Move]:
    """The client pays its charge and the worker's owner earns its reward; both count the generation and its billed
    tokens."""
    charge, reward = (
        Move(request.user_id, -moved.charge, Kind.CHARGE, tokens),
        Move(owner_id, moved.reward, Kind.REWARD, tokens),
    )
    return [charge, reward]
