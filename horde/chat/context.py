"""Context fitting: make the messages and max_tokens fit a context the workers offer.

- reject: refuse messages that do not fit the request's context.
- grow: raise the context up to the largest one an eligible worker declares.
- truncate_oldest (default): grow, then drop whole turns from the oldest forward,
  keeping every system message and the latest user message with what follows it.

Each message is estimated once and dropping subtracts from the total, so the
work is linear in the number of messages (a body of thousands of short turns
must not stall the process).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from horde import errors
from horde.chat import tokens
from horde.cooperative import pause_every


@dataclass
class FittedContext:
    messages: list[dict]
    context_tokens: int
    prompt_tokens: int
    adjustments: list[dict] = field(default_factory=list)


def fit(
    messages: list[dict],
    tools: list[dict] | None,
    *,
    max_tokens: int,
    mode: str,
    default_context: int,
    largest_context: int,
) -> FittedContext:
    context = min(default_context, largest_context)
    message_costs = [tokens.message_tokens(message) for message in pause_every(messages)]
    tools_cost = tokens.tools_tokens(tools)
    prompt = sum(message_costs) + tools_cost
    if prompt + max_tokens <= context:
        return FittedContext(messages, context, prompt)
    if mode == "reject":
        raise _does_not_fit(prompt, tools_cost, max_tokens, context)
    adjustments = []
    grown = min(prompt + max_tokens, largest_context)
    if grown > context:
        adjustments.append({"from": context, "to": grown, "reason": "grow"})
        context = grown
    if prompt + max_tokens <= context:
        return FittedContext(messages, context, prompt, adjustments)
    if mode == "grow":
        raise _does_not_fit(prompt, tools_cost, max_tokens, context)
    kept, new_prompt = _drop_oldest_turns(messages, message_costs, prompt, context - max_tokens)
    if new_prompt + max_tokens > context:
        raise _does_not_fit(new_prompt, tools_cost, max_tokens, context, after_truncation=True)
    dropped = len(messages) - len(kept)
    adjustments.append({"from": prompt, "to": new_prompt, "reason": "truncate_oldest", "dropped_messages": dropped})
    return FittedContext(kept, context, new_prompt, adjustments)


def _turn_starts(messages: list[dict], last_user: int) -> list[int]:
    """Indices where a droppable turn starts: each user message before the latest one."""
    starts = [index for index in range(last_user) if messages[index]["role"] == "user"]
    first_droppable = next((i for i in range(last_user) if messages[i]["role"] != "system"), None)
    if first_droppable is not None and (not starts or starts[0] > first_droppable):
        starts.insert(0, first_droppable)
    return starts


def _drop_oldest_turns(
    messages: list[dict], message_costs: list[int], prompt: int, prompt_budget: int
) -> tuple[list[dict], int]:
    """The messages left after dropping the oldest turns until the prompt fits, and their estimate."""
    user_indices = [index for index, message in enumerate(messages) if message["role"] == "user"]
    last_user = user_indices[-1] if user_indices else len(messages) - 1
    starts = _turn_starts(messages, last_user) + [last_user]
    dropped = [False] * len(messages)
    for start, end in itertools.pairwise(starts):
        if prompt <= prompt_budget:
            break
        for index in range(start, end):
            if messages[index]["role"] != "system":
                dropped[index] = True
                prompt -= message_costs[index]
    kept = [message for index, message in enumerate(messages) if not dropped[index]]
    return kept, prompt


def _does_not_fit(prompt: int, tools_cost: int, max_tokens: int, context: int, after_truncation: bool = False):
    """The refusal names the tools' share: no turn can be dropped from it, and a client that sends tools the user
    never chose (a chat UI's built-in ones) leaves the user no other way to see why a short message is refused."""
    detail = " after dropping every older turn" if after_truncation else ""
    tools = f" ({tools_cost} of them the tools' definitions, which no dropped turn shortens)" if tools_cost else ""
    return errors.NoWorkerSupportsLimit(
        f"The messages take about {prompt} tokens{tools}{detail}; with max_tokens {max_tokens} they need "
        f"{prompt + max_tokens}, above the context of {context} tokens that the request can have.",
        param="messages",
        metadata={
            "prompt_tokens": prompt,
            "tools_tokens": tools_cost,
            "max_tokens": max_tokens,
            "context_tokens": context,
        },
    )
