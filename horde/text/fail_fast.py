"""The OpenAI front's checks before a text request is queued: refuse what no online worker can serve.

The native text API queues such a request with a warning, as the AI Horde does; an
OpenAI client instead gets the same gap codes as on chat completions, before anything
is queued or charged. The request's context is set here to the largest context of
the workers that can serve it, and the prompt must fit in it with max_tokens.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from sqlalchemy import Row

from horde import errors
from horde.chat import pricing as chat_pricing
from horde.chat import queue as chat_queue
from horde.chat.admission import refuse_long_queue
from horde.text import known_models, pricing, roster
from horde.text.schemas import MAX_CONTEXT_TOKENS

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

    from horde.config import Settings


@dataclass(frozen=True)
class QueueView:
    """What the estimates read of the queue: generations waiting for the request's models, the typical job."""

    waiting: int
    job_s: float


@dataclass
class FrontOptions:
    model_param: str = "model"
    availability_mode: str = "fail_fast"
    max_kudos: int | None = None
    penalties: dict = field(default_factory=dict)


def check(
    session: Session,
    settings: Settings,
    loaded: dict,
    options: FrontOptions,
    workers: list[Row],
    queue_view: QueueView,
) -> list[Row]:
    """Raise the first gap; on success set params.max_context_length for the request and return the online
    text workers serving its models. `workers`: the online text workers (horde/text/roster.py), the roster it
    decides on. A model is known when it is in the model reference, when an online worker declares it, else when
    a worker ever did (horde/text/known_models.py, read only for the others)."""
    models, params = loaded["models"], loaded["params"]
    known = set(chat_pricing.model_sizes(settings.model_reference_path))
    known |= roster.declared_models(workers)
    known |= known_models.remembered(session, [model for model in models if model not in known])
    for index, model in enumerate(models):
        if model not in known:
            param = "model" if options.model_param == "model" else f"models[{index}]"
            raise errors.ModelNotFound(
                f"The model `{model}` does not exist or you do not have access to it.", param=param
            )
    online = roster.online_among(workers, settings.worker_online_window_s, models)
    names = ", ".join(models)
    if not online:
        raise errors.NoEligibleWorker(
            f"The model {names} is not served by any online text worker.", param=options.model_param
        )
    if options.penalties:
        missing = sorted(options.penalties)
        raise errors.NoWorkerSupportsFeatures(
            f"No online text worker serving {names} supports: {', '.join(missing)} (the AI Horde's text workers "
            "cannot declare them; send 0 or leave them out).",
            metadata={"missing": missing},
        )
    only = set(loaded.get("workers") or ())
    allowed = [
        w for w in online if (not only or w.id in only) and (w.owner_trusted or not loaded.get("trusted_workers"))
    ]
    if not allowed:
        raise errors.NoEligibleWorker(
            f"No online text worker serving {names} matches the request's worker "
            "restrictions (horde.only, horde.trusted_workers).",
            param="horde",
        )
    wanted = params["max_length"]
    long_enough = [w for w in allowed if (w.text_max_length or 0) >= wanted]
    if not long_enough:
        largest = max(w.text_max_length or 0 for w in allowed)
        raise errors.NoWorkerSupportsLimit(
            f"No online text worker serving {names} generates max_tokens {wanted}; the largest is {largest}.",
            param="max_tokens",
        )
    context = min(MAX_CONTEXT_TOKENS, max(w.text_max_context_length or 0 for w in long_enough))
    prompt_tokens = pricing.prompt_tokens(loaded["prompt"], MAX_CONTEXT_TOKENS * 4)
    if prompt_tokens + wanted > context:
        raise errors.NoWorkerSupportsLimit(
            f"The prompt (about {prompt_tokens} tokens) and max_tokens {wanted} do not fit the largest context of "
            f"the online workers serving {names}, {context} tokens.",
            param="prompt",
        )
    params["max_context_length"] = context
    estimate = pricing.estimate(
        models,
        n=params.get("n", 1),
        max_length=wanted,
        prompt_tokens=prompt_tokens,
        reference_path=settings.model_reference_path,
    )
    if options.max_kudos is not None and estimate > options.max_kudos:
        raise errors.MaxKudosExceeded(
            f"The request's kudos estimate of {estimate} exceeds its max_kudos of {options.max_kudos}.",
            param="horde.max_kudos",
            metadata={"kudos_estimate": estimate, "max_kudos": options.max_kudos},
        )
    if options.availability_mode == "fail_fast":
        threads = sum(w.threads for w in long_enough)
        wait_s = chat_queue.wait_estimate_s(queue_view.waiting, threads, queue_view.job_s)
        refuse_long_queue(threads, wait_s, settings.oai_wait_budget_s)
    return online
