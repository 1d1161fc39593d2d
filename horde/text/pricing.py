"""Text prices: the Horde's one formula (horde/chat/pricing.py), per generation.

A generation of `tokens` from a prompt of `prompt_tokens` costs
ceil(size_b / 8 × (tokens / 100 + prompt_tokens / 1000)), at least 1 kudos; a
request's estimate prices each of its `n` generations at its full `max_length`,
with the largest model it accepts (the AI Horde's rule, so that listing a small
model beside a large one does not lower the price). The requester is charged and
the worker rewarded once per generation, at submit, for what its text shows: the
rule of chat's replies (`pricing.charge`, decision 0028).
"""

from __future__ import annotations

from horde.chat import pricing
from horde.chat.tokens import text_tokens

#: The model priced when a request accepts any model.
ANY_MODEL = ""


def prompt_tokens(prompt: str, max_context_length: int) -> int:
    """The prompt's tokens as a worker sees them: it keeps at most the request's context."""
    return min(text_tokens(prompt), max_context_length)


def priciest_model(models: list[str], reference_path: str | None) -> str:
    if not models:
        return ANY_MODEL
    return max(models, key=lambda model: pricing.model_size_b(model, reference_path))


def estimate(models: list[str], *, n: int, max_length: int, prompt_tokens: int, reference_path: str | None) -> int:
    one = pricing.price(
        priciest_model(models, reference_path),
        completion_tokens=max_length,
        prompt_tokens=prompt_tokens,
        reference_path=reference_path,
    )
    return n * one


def charge(
    model: str,
    *,
    generation: str,
    reported: int | None,
    max_length: int,
    prompt_tokens: int,
    reference_path: str | None,
) -> pricing.Charge:
    """One generation's tokens and kudos: a chat reply's rule, for the reply of its text alone."""
    return pricing.charge(
        model,
        reported=reported,
        reply={"content": generation},
        max_tokens=max_length,
        prompt_tokens=prompt_tokens,
        reference_path=reference_path,
    )
