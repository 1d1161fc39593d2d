"""Kudos prices and the free output allowance.

price = ceil(size_b / 8 × (completion_tokens / 100 + prompt_tokens / 1000)) + 5 × images,
at least 1 kudos; size_b is the model's size in billions of parameters from the
model reference file, DEFAULT_MODEL_SIZE_B when unknown. The estimate prices the
full max_tokens; the charge prices what was generated, as the worker reports it
but never more than the reply can hold (`billable_completion_tokens`), and an empty
reply earns the floor (`charge`: the one rule of chat and text, decision 0028).
"""

from __future__ import annotations

import functools
import json
import math
from pathlib import Path
from typing import NamedTuple

from horde.chat.tokens import reply_tokens

DEFAULT_MODEL_SIZE_B = 8
REFERENCE_SIZE_B = 8
COMPLETION_TOKENS_PER_UNIT = 100
PROMPT_TOKENS_PER_UNIT = 1000
KUDOS_PER_IMAGE = 5
MIN_PRICE_KUDOS = 1
FREE_ALLOWANCE_MAX_TOKENS = 4096
FREE_ALLOWANCE_MIN_TOKENS = 512
#: A reply's billable tokens are at most this many per token of the Horde's estimate (4 characters a token,
#: so one token per character, the most a real tokenizer produces for ordinary text) ...
REPLY_TOKENS_MARGIN = 4
#: ... plus these, for the special tokens a backend may count (end of turn, tool-call markers).
REPLY_TOKENS_SLACK = 16
BUILTIN_REFERENCE = Path(__file__).with_name("model_reference.json")


@functools.lru_cache(maxsize=8)
def model_sizes(path: str | None = None) -> dict[str, float]:
    with open(path or BUILTIN_REFERENCE, encoding="utf-8") as handle:
        return dict(json.load(handle).get("models", {}))


def model_size_b(model: str, reference_path: str | None = None) -> float:
    return model_sizes(reference_path).get(model, DEFAULT_MODEL_SIZE_B)


def price(
    model: str, *, completion_tokens: int, prompt_tokens: int, n_images: int = 0, reference_path: str | None = None
) -> int:
    size_factor = model_size_b(model, reference_path) / REFERENCE_SIZE_B
    units = completion_tokens / COMPLETION_TOKENS_PER_UNIT + prompt_tokens / PROMPT_TOKENS_PER_UNIT
    return max(MIN_PRICE_KUDOS, math.ceil(size_factor * units)) + KUDOS_PER_IMAGE * n_images


def billable_completion_tokens(reported: int | None, reply: dict, max_tokens: int) -> int:
    """The completion tokens a reply is charged (and its worker rewarded) for.

    The worker's count when it reports one, else the Horde's estimate; either way at most `max_tokens` and at
    most what the reply itself can hold, so a short reply cannot claim a long one's price.
    """
    estimate = reply_tokens(reply)
    bound = REPLY_TOKENS_MARGIN * estimate + REPLY_TOKENS_SLACK
    return min(estimate if reported is None else reported, bound, max_tokens)


class Charge(NamedTuple):
    """What one generation is billed: its completion tokens and its kudos (the requester's charge, the reward)."""

    completion_tokens: int
    kudos: int


def charge(
    model: str,
    *,
    reported: int | None,
    reply: dict,
    max_tokens: int,
    prompt_tokens: int,
    n_images: int = 0,
    reference_path: str | None = None,
) -> Charge:
    """Kudos only for work that shows (decision 0028), for a chat reply and for each text generation alike.

    The billable tokens are `billable_completion_tokens`. A reply that shows no work (no content, no reasoning,
    no tool call) earns the floor, MIN_PRICE_KUDOS: the prompt's part of the price (and its images) would
    otherwise pay for a reply that a worker need not have generated at all.
    """
    tokens = billable_completion_tokens(reported, reply, max_tokens)
    if reply_tokens(reply) == 0:
        return Charge(tokens, MIN_PRICE_KUDOS)
    kudos = price(
        model, completion_tokens=tokens, prompt_tokens=prompt_tokens, n_images=n_images, reference_path=reference_path
    )
    return Charge(tokens, kudos)


def free_allowance_tokens(eligible_threads: int, queued_requests: int) -> int:
    """4096 tokens on an idle pool, shrinking towards 512 as the queue outgrows the threads."""
    if eligible_threads <= 0:
        return FREE_ALLOWANCE_MIN_TOKENS
    share = eligible_threads / (eligible_threads + queued_requests)
    return max(FREE_ALLOWANCE_MIN_TOKENS, int(FREE_ALLOWANCE_MAX_TOKENS * share))
