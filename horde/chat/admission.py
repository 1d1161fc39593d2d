"""Admission: turn a validated native request into a queued ChatRequest, or refuse it.

Every refusal here happens before anything is queued or charged. Order of the
refusals: payload, rate, known models, online workers, declarations and limits,
worker restrictions, max_tokens, context fitting, price caps, kudos, queue. The
rate is counted last, by the INSERT (_RateTurn), and its refusal comes first anyway.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from sqlalchemy.orm import Session

from horde import errors
from horde.accounts import rate_limit, shared_keys
from horde.accounts import service as accounts
from horde.accounts.identity import Identity
from horde.accounts.moves import multiplied
from horde.chat import affinity, context, conversation, pricing, queue, request_rows, requirements, tiers
from horde.chat.eligibility import Need, breaks_limits, fits, missing_declarations, passes_restrictions
from horde.chat.models import PROGRESS_NOT_KEPT, WAITING, ChatRequest, new_id
from horde.chat.schemas import CHAT_REQUEST_SCHEMA
from horde.chat.tokens import count_images
from horde.config import Settings
from horde.cooperative import pause_every
from horde.http.contract import DEFAULT_AVAILABILITY_MODE
from horde.http.payload import load
from horde.storage.database import is_postgresql
from horde.timeutil import utcnow
from horde.workers import service as workers

if TYPE_CHECKING:
    from horde.chat.snapshots import Snapshots

DEFAULT_MAX_TOKENS = 512
DEFAULT_SAMPLING = {"temperature": 1.0, "top_p": 1.0, "frequency_penalty": 0, "presence_penalty": 0}
FORWARDED_KEYS = ("tool_choice", "parallel_tool_calls", "response_format", "seed", "stop", "reasoning_effort")
RATE_WINDOW_S = rate_limit.RATE_WINDOW_S
MAX_CLIENT_AGENT_CHARS = 300


def validate(native: dict) -> dict:
    return load(CHAT_REQUEST_SCHEMA, native)


def check_message_count(messages: Any, settings: Settings) -> None:
    """At most HORDE_MAX_MESSAGES messages, refused before any other look at them."""
    if isinstance(messages, list) and len(messages) > settings.max_messages:
        raise errors.UnsupportedChatParameter(
            f"Invalid 'messages': array too long. Expected an array with maximum length {settings.max_messages}, "
            f"but got an array with length {len(messages)} instead.",
            param="messages",
            metadata={"max_messages": settings.max_messages},
        )


def models_of(native: dict) -> list[str]:
    return list(native.get("models") or [native["model"]])


def admit(
    session: Session,
    settings: Settings,
    user: Identity,
    native: dict,
    *,
    client_agent: str = "unknown:0:unknown",
    model_param: str | None = None,
    client_address: str | None = None,
    snapshots: Snapshots | None = None,
    body_hash: str | None = None,
    holders: int = 0,
    request_id: str | None = None,
    roster_generation: int | None = None,
    conversation_key: str | None = None,
    progress_log: int = PROGRESS_NOT_KEPT,
    tier: tiers.Tier = tiers.INTERACTIVE,
) -> ChatRequest:
    """Queue `native` (already validated, images already inlined) for `user`, or raise a HordeError.

    With `snapshots` the queue length and typical job time behind the estimates may be a second old, and
    with `roster_generation` too (CheckIns.generation) the workers: a refusal is decided on the workers as
    they are now, read again. `body_hash` and `holders` are stored with the request (see
    horde/oai/idempotency.py); `conversation_key` (horde/chat/conversation.py) too, and the request is reserved
    for the conversation's worker when that worker is eligible for it (horde/chat/affinity.py). `tier`: flex
    requests wait behind interactive ones and pay less; batch lines need their estimate upfront and count on a
    rate of their own (horde/chat/tiers.py)."""
    model_param = model_param or ("model" if "model" in native else "models")
    if user.shared_key_id is not None and "max_tokens" not in native:
        native = _within_shared_key_tokens(session, user.shared_key_id, native)
    row = {
        "id": request_id or new_id(),
        "user_id": user.id,
        "shared_key_id": user.shared_key_id,
        "client_agent": _storable_agent(client_agent),
        "client_address": client_address,
        "body_hash": body_hash,
        "holders": holders,
        "conversation_key": conversation_key,
        "progress_log": progress_log,
        "service_tier": tier.name,
        "batch_line": tier.rate_scope is not None,
    }
    turn = _RateTurn(session, settings, user, client_address if user.anonymous else None, tier)
    queue_on = functools.partial(_queue_on, session, settings, native, model_param, row, turn, snapshots=snapshots)
    try:
        if snapshots is not None and roster_generation is not None:
            try:
                return queue_on(snapshots.roster(session, roster_generation, settings.worker_online_window_s))
            except errors.TooManyRequests:
                raise
            except errors.HordeError:
                pass  # a worker may have checked in on another process within the second: the fresh roster decides
        return queue_on(request_rows.roster(session, settings.worker_online_window_s))
    except errors.TooManyRequests:
        raise
    except errors.HordeError:
        turn.refuse_if_over()  # the rate's refusal comes before those of the checks that ran ahead of its turn
        raise


class _RateTurn:
    """The caller's rate check, taken as late as admission can: by the INSERT itself (request_rows.admit_request),
    which on PostgreSQL first waits for the caller's turn, so that the caller's other admissions are counted one
    after the other (horde/accounts/rate_limit.py), and writes nothing at the limit. With the per-process
    snapshots warm that INSERT is the admission's only statement and runs in autocommit: one round trip, and
    the turn is held only while it runs. The rate's refusal still comes first: a refusal of any other check asks
    the count first."""

    def __init__(self, session: Session, settings: Settings, user: Identity, address: str | None, tier: tiers.Tier):
        self.session, self.settings, self.user, self.tier = session, settings, user, tier
        #: The caller's scope of the rate: its address (anonymous), or a scope of its tier's (batch lines).
        self.address = tier.rate_scope or address
        self.limit = tiers.BATCH_RATE_LIMIT if tier.rate_scope else settings.rate_limit_per_minute

    def take_before_locking_the_caller(self) -> None:
        """On PostgreSQL, the turn before the caller's row lock (the kudos check): the INSERT's foreign key reads
        that row, so an admission holding the turn would otherwise wait for one holding the row that waits for
        the turn, a deadlock. Held until the commit, as the row lock is."""
        if is_postgresql(self.session):
            rate_limit.take_turn(self.session, self.user.id, self.address)

    def refuse_if_over(self) -> None:
        """429 when the caller is at its limit: for a refusal of another check, which the rate's comes before."""
        rate_limit.refuse_if_used_up(self.session, self.user.id, self.address, self.limit)

    def insert(self, values: dict[str, Any], eligible: list) -> ChatRequest:
        """The request written, unless the caller is at its limit (429, nothing written); reserved for its
        conversation's worker when that worker is among the `eligible` ones."""
        limit = self.limit
        workers = affinity.candidates(eligible, self.settings.affinity_wait_ms) if values["conversation_key"] else ""
        # A batch line is bounded by its batch's lines in flight (HORDE_BATCH_MAX_IN_FLIGHT), not the concurrency.
        concurrency = None if self.user.anonymous or self.tier.rate_scope else self.user.concurrency
        return request_rows.admit_request(
            self.session,
            values,
            limit=limit,
            rate_address=self.address,
            affinity_workers=workers,
            concurrency=concurrency,
        )


def _queue_on(
    session: Session,
    settings: Settings,
    native: dict,
    model_param: str,
    row: dict[str, Any],
    turn: _RateTurn,
    workers_and_trust: tuple[list, dict[int, bool]],
    *,
    snapshots: Snapshots | None,
) -> ChatRequest:
    """Admission's checks of the workers and the fitting, the caller's rate turn, the price and the queue, then
    the INSERT of `row` completed."""
    models = models_of(native)
    roster, trust = workers_and_trust
    _check_known(session, roster, models, model_param, settings.model_reference_path)
    online = workers.online_among(roster, settings.worker_online_window_s, models)
    if not online:
        raise errors.NoEligibleWorker(
            f"The model {_names(models)} is not served by any online worker.", param=model_param
        )
    need = _need(native, models)
    capable = [w for w in online if not missing_declarations(w, need) and not breaks_limits(w, need)]
    if not capable:
        raise _declaration_gap(online, need, models)
    allowed = [w for w in capable if passes_restrictions(w, need, trust.get(w.owner_id, False))]
    if not allowed:
        raise errors.NoEligibleWorker(
            f"No online worker serving {_names(models)} matches the request's worker restrictions "
            "(horde.only, horde.trusted_workers).",
            param="horde",
        )
    adjustments = []
    requested = native.get("max_tokens", DEFAULT_MAX_TOKENS)
    largest_length = max(w.max_length for w in allowed)
    need.max_tokens = min(requested, largest_length)
    if need.max_tokens < requested:
        adjustments.append({"from": requested, "to": largest_length, "reason": "worker_max_length"})
    tools = native.get("tools") if requirements.forwards_tools(native) else None
    fitted = context.fit(
        native["messages"],
        tools,
        max_tokens=need.max_tokens,
        mode=native["context_fitting"],
        default_context=settings.default_context_tokens,
        largest_context=max(w.max_context_length for w in allowed if w.max_length >= need.max_tokens),
    )
    need.context_tokens = fitted.context_tokens
    adjustments += fitted.adjustments
    eligible = [w for w in allowed if fits(w, need)]
    if not eligible:
        raise errors.NoWorkerSupportsLimit(
            f"No online worker serving {_names(models)} accepts max_tokens {need.max_tokens} "
            f"with a context of {need.context_tokens} tokens.",
            param="max_tokens",
        )
    n_images = sum(count_images(message.get("content")) for message in fitted.messages)
    price = pricing.price(
        models[0],
        completion_tokens=need.max_tokens,
        prompt_tokens=fitted.prompt_tokens,
        n_images=n_images,
        reference_path=settings.model_reference_path,
    )
    estimate = multiplied(  # what the requester pays: its tier's share, times its usage multiplier (PUT /users/{id})
        tiers.requester_price(price, turn.tier.name, settings.batch_price_factor), turn.user.usage_multiplier
    )
    queued = snapshots.waiting(session, models) if snapshots else queue.waiting_for_models(session, models)
    job_s = (
        snapshots.typical_job_s(session, settings.default_job_duration_s)
        if snapshots
        else queue.typical_job_s(session, settings.default_job_duration_s)
    )
    _check_price(session, native, turn, estimate, need, eligible, queued)
    _check_queue(native, settings, eligible, queued, job_s)
    payload = _payload(native, fitted.messages, tools, need.max_tokens)
    if row["conversation_key"]:
        payload[conversation.FIELD] = row["conversation_key"]  # the worker keeps a conversation on one slot
    created_at = utcnow()
    if turn.user.shared_key_id is not None:  # last: it locks the key until the request is written
        shared_keys.hold(
            session,
            turn.user.id,
            turn.user.shared_key_id,
            estimate=estimate,
            tokens=requested,
            tokens_param="max_tokens",
        )
    return turn.insert(
        {
            **row,
            "state": WAITING,
            "created_at": created_at,
            "reserved_until": affinity.reserved_until(created_at, settings.affinity_wait_ms),
            "finished_at": None,
            "models": models,
            "max_tokens": need.max_tokens,
            "context_tokens": need.context_tokens,
            "prompt_tokens": fitted.prompt_tokens,
            "required_features": need.features,
            "required_guarantees": need.guarantees,
            "tools_temperature": need.tools_temperature,
            "only_workers": ("|" + "|".join(need.only) + "|") if need.only else None,
            "trusted_only": need.trusted_only,
            "payload": payload,
            "n_images": n_images,
            "kudos_estimate": estimate,
            "kudos_charged": 0,
            "usage_multiplier": turn.user.usage_multiplier,
            "context_adjustments": adjustments or None,
            "delivered": False,
            "attempts": 0,
            "current_job_id": None,
            "worker_id": None,
            "worker_name": None,
            "served_model": None,
            "progress_content": None,
            "progress_reasoning": None,
            "progress_seq": 0,
            "fault_rc": None,
            "fault_message": None,
        },
        eligible,
    )


def _within_shared_key_tokens(session: Session, shared_key_id: str, native: dict) -> dict:
    """A request paid with a shared key that limits its tokens, and that names no max_tokens: the default
    max_tokens lowered to the key's limit (one named above it is refused, shared_keys.hold)."""
    limit = shared_keys.text_tokens_limit(session, shared_key_id)
    if limit == shared_keys.UNLIMITED or limit >= DEFAULT_MAX_TOKENS:
        return native
    return {**native, "max_tokens": max(1, limit)}


def _need(native: dict, models: list[str]) -> Need:
    required = requirements.derive(native)
    tools_temperature = None
    if requirements.forwards_tools(native):
        tools_temperature = native.get("temperature", DEFAULT_SAMPLING["temperature"])
    return Need(
        models=models,
        max_tokens=0,
        context_tokens=0,
        features=required.features,
        guarantees=required.guarantees,
        tools_temperature=tools_temperature,
        only=native.get("only"),
        trusted_only=native.get("trusted_workers", False),
    )


def _payload(native: dict, messages: list[dict], tools, max_tokens: int) -> dict:
    payload = {"messages": [dict(message) for message in pause_every(messages)], "max_tokens": max_tokens}
    for key, default in DEFAULT_SAMPLING.items():
        payload[key] = native.get(key, default)
    for key in FORWARDED_KEYS:
        if native.get(key) is not None:
            payload[key] = native[key]
    if tools:
        payload["tools"] = tools
    else:
        payload.pop("tool_choice", None)
        payload.pop("parallel_tool_calls", None)
    return payload


def _storable_agent(client_agent: str) -> str:
    """The Client-Agent header as stored: a header may carry NUL, which PostgreSQL text cannot."""
    return client_agent.replace("\x00", "")[:MAX_CLIENT_AGENT_CHARS]


def _names(models: list[str]) -> str:
    return ", ".join(models)


def _check_known(session: Session, roster, models: list[str], model_param: str, reference_path: str | None) -> None:
    """A model is known once any worker declared it (even if none does now) or when it is in the model reference:
    those the online `roster` declares, else the models remembered (known_models), read only for the others."""
    known = workers.known_models(roster) | set(pricing.model_sizes(reference_path))
    known |= workers.remembered_models(session, [model for model in models if model not in known])
    for index, model in enumerate(models):
        if model not in known:
            param = "model" if model_param == "model" else f"models[{index}]"
            raise errors.ModelNotFound(
                f"The model `{model}` does not exist or you do not have access to it.", param=param
            )


def _declaration_gap(online, need: Need, models) -> errors.HordeError:
    """404 naming what the closest online worker lacks."""
    best_missing = None
    for worker in online:
        missing = missing_declarations(worker, need)
        if breaks_limits(worker, need):
            missing.append(f"max_temperature_with_tools >= {need.tools_temperature}")
        if best_missing is None or len(missing) < len(best_missing):
            best_missing = missing
    return errors.NoWorkerSupportsFeatures(
        f"No online worker serving {_names(models)} supports: {', '.join(best_missing or [])}.",
        metadata={"missing": best_missing},
    )


def _check_price(session: Session, native, turn: _RateTurn, estimate: int, need: Need, eligible, queued: int) -> None:
    max_kudos = native.get("max_kudos")
    if max_kudos is not None and estimate > max_kudos:
        raise errors.MaxKudosExceeded(
            f"The request's kudos estimate of {estimate} exceeds its max_kudos of {max_kudos}.",
            param="horde.max_kudos",
            metadata={"kudos_estimate": estimate, "max_kudos": max_kudos},
        )
    threads = sum(w.threads for w in eligible)
    allowance = pricing.free_allowance_tokens(threads, queued)
    if need.max_tokens <= allowance and turn.tier.free_allowance:
        return
    # The user's row stays locked (PostgreSQL) until this request is queued, so concurrent admissions of one
    # user are checked one after the other and each sees the reservations of those before it.
    turn.take_before_locking_the_caller()
    balance = accounts.locked_balance(session, turn.user.id, lock=is_postgresql(session))
    reserved = queue.reserved_kudos(session, turn.user.id)
    if balance - reserved < estimate:
        held = f", of which {reserved} are reserved by its requests still waiting or processing" if reserved else ""
        why = (
            f"max_tokens {need.max_tokens} is above the free allowance of {allowance} tokens"
            if turn.tier.free_allowance
            else "a batch line has no free allowance"
        )
        raise errors.KudosUpfront(
            f"{why}, so the API key needs {estimate} kudos upfront; it has {balance}{held}.",
            param="max_tokens",
            metadata={
                "kudos_estimate": estimate,
                "kudos": balance,
                "reserved_kudos": reserved,
                "free_allowance_tokens": allowance,
            },
        )


def _check_queue(native: dict, settings: Settings, eligible: list, queued: int, job_s: float) -> None:
    if native.get("availability_mode", DEFAULT_AVAILABILITY_MODE) != DEFAULT_AVAILABILITY_MODE:
        return
    threads = sum(w.threads for w in eligible)
    wait_s = queue.wait_estimate_s(queued, threads, job_s)
    refuse_long_queue(threads, wait_s, settings.oai_wait_budget_s)


def refuse_long_queue(threads: int, wait_s: int, budget_s: float) -> None:
    """fail_fast: 503 queue_unavailable when the estimated wait is over the budget (chat and text)."""
    if wait_s > budget_s:
        raise errors.QueueUnavailable(
            f"The queue is too long for the request: {threads} eligible worker threads, an estimated wait of "
            f"{wait_s} s and a budget of {int(budget_s)} s. Retry later, or send availability_mode 'wait'.",
            metadata={"eligible_threads": threads, "wait_time": wait_s, "budget_s": int(budget_s)},
            headers={"Retry-After": str(max(1, int(wait_s - budget_s)))},
        )
