"""Admission of a text request: validate, price, check kudos and rate, then queue (or only price, on a dry run).

As on the AI Horde, a request no online worker can serve yet is still queued, and
the answer's `message` says so; it faults if no worker takes it within its lifetime.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from sqlalchemy import ColumnElement, Integer, Row, and_, bindparam, func, select
from sqlalchemy.orm import Session

from horde import errors
from horde.accounts import rate_limit, shared_keys
from horde.accounts import service as accounts
from horde.accounts.identity import Identity
from horde.accounts.models import DEFAULT_CONCURRENCY, User
from horde.accounts.moves import multiplied
from horde.chat import pricing as chat_pricing
from horde.chat import request_rows, tiers
from horde.chat.models import COUNTED_IN_FLIGHT_SQL, counted_in_flight
from horde.http.payload import load
from horde.storage import precompiled
from horde.storage.database import table_of
from horde.text import pricing
from horde.text.models import ANY_MODEL, PROCESSING, WAITING, TextRequest, TextRequestModel, new_id
from horde.text.schemas import (
    DEFAULT_CONTEXT_TOKENS,
    DEFAULT_LENGTH_TOKENS,
    GENERATION_INPUT_SCHEMA,
    MIN_LENGTH_TOKENS,
    unknown_keys,
)
from horde.timeutil import utcnow

if TYPE_CHECKING:
    from horde.config import Settings


RATE_WINDOW_S = rate_limit.RATE_WINDOW_S


_USERS = table_of(User)
shared_keys.holds_in(table_of(TextRequest), (WAITING, PROCESSING))
#: The request's INSERT below the caller's rate limit, which chat and text share, with what the caller's balance
#: decides (chat's priority, and whether the estimate was paid upfront) worked out from the balance as the INSERT
#: reads it: no read of the user before.
_OPEN = table_of(TextRequest).alias("open_requests")
#: The generations of the caller's (bind parameter `user_id`) text requests waiting or running, by the partial
#: index that holds those requests.
_IN_FLIGHT = (
    select(func.coalesce(func.sum(_OPEN.c.waiting + _OPEN.c.processing), 0))
    .select_from(_OPEN)
    .where(
        _OPEN.c.user_id == bindparam("user_id"),
        counted_in_flight(_OPEN.c.state),
    )
)
#: PostgreSQL: the same count once the caller's turn is taken (accounts/rate_limit.py count_under_turn_sql).
IN_FLIGHT_FUNCTION = "horde_text_in_flight"
IN_FLIGHT_FUNCTION_SQL = rate_limit.count_under_turn_sql(
    IN_FLIGHT_FUNCTION,
    f"SELECT coalesce(sum(waiting + processing), 0) FROM {TextRequest.__tablename__} "
    f"WHERE user_id = caller AND {COUNTED_IN_FLIGHT_SQL}",
)


def _within_concurrency(postgres: bool) -> list[ColumnElement[bool]]:
    """Within the caller's concurrency, the new request's `n` generations added (`in_flight_new`), as the AI Horde
    counts a text request (accounts/rate_limit.py within_concurrency)."""
    added = bindparam("in_flight_new", type_=Integer)
    return rate_limit.within_concurrency(postgres, IN_FLIGHT_FUNCTION, _IN_FLIGHT, added)


_ADMIT = rate_limit.InsertBelowLimit(
    table_of(TextRequest),
    table_of(TextRequestModel),
    returning=("id", "priority", "priority_class", "upfront_paid"),
    computed={
        **request_rows.PRIORITY_FROM_BALANCE,
        "upfront_paid": and_(
            _USERS.c.anonymous.is_(False), _USERS.c.kudos >= bindparam("new_kudos_estimate", type_=Integer)
        ),
    },
    where=(request_rows.PRIORITY_CALLER,),
    where_by_database=_within_concurrency,
    models_when_none=(ANY_MODEL,),
)
NO_WORKER_MESSAGE = "Warning: No available workers can fulfill this request. It will expire in {minutes} minutes. {why}"


@dataclass
class Admitted:
    kudos: int
    request: TextRequest | None = None
    message: str | None = None
    warnings: list[dict] = field(default_factory=list)


def validate(body: object) -> tuple[dict, list[dict]]:
    """The loaded request, with null values dropped, and a warning per key left out."""
    loaded = load(GENERATION_INPUT_SCHEMA, body)
    ignored = unknown_keys(GENERATION_INPUT_SCHEMA, body)
    warnings = [
        {"code": "UnknownField", "message": f"The field '{name}' is not part of the text API; it was ignored."}
        for name in ignored
    ]
    loaded = {key: value for key, value in loaded.items() if value is not None}
    loaded["params"] = {key: value for key, value in (loaded.get("params") or {}).items() if value is not None}
    if loaded.get("extra_source_images"):
        raise errors.BadRequest("This request type does not accept extra source images.", param="extra_source_images")
    if loaded.get("style"):
        raise errors.StyleNotFound(f"This Horde has no text style '{loaded['style']}'.", param="style")
    return loaded, warnings


def admit(
    session: Session,
    settings: Settings,
    user: User | Identity,
    loaded: dict,
    *,
    client_agent: str = "unknown:0:unknown",
    client_address: str | None = None,
    warnings: list[dict] | None = None,
    lifetime_s: float,
    online: list[Row],
    queued: int,
    body_hash: str | None = None,
    holders: int = 0,
    tier: tiers.Tier = tiers.INTERACTIVE,
    request_id: str | None = None,
) -> Admitted:
    """`online`: the online text workers serving the request's models (horde/text/roster.py); `queued`: the
    generations waiting for them. `body_hash` and `holders`: the OpenAI front's idempotency bookkeeping, written
    with the row.

    The request is written with Core INSERTs and comes back as a transient TextRequest, never added to a
    session (no unit of work to flush), as chat's admission does. The caller's balance is read only when the
    request is over the free allowance; otherwise the INSERT alone reads it. `tier`: as chat's
    (horde/chat/tiers.py); `request_id`: the new request's id, when the caller chose it (a batch line's)."""
    params = dict(loaded["params"])
    n = params.get("n", 1)
    params["n"] = n
    params.setdefault("max_length", DEFAULT_LENGTH_TOKENS)
    params.setdefault("max_context_length", DEFAULT_CONTEXT_TOKENS)
    models = list(dict.fromkeys(loaded.get("models") or []))
    prompt_tokens = pricing.prompt_tokens(loaded["prompt"], params["max_context_length"])
    warnings = list(warnings or [])
    multiplier = float(getattr(user, "usage_multiplier", None) or 1.0)  # what the requester pays: PUT /users/{id}
    priced = (models, prompt_tokens, tier, multiplier)
    _downgrade_or_refuse(session, settings, user, loaded, params, priced, online, queued, warnings)
    estimate = _estimate(settings, models, params, prompt_tokens, tier, multiplier)
    if loaded.get("dry_run"):
        return Admitted(kudos=estimate, warnings=warnings)
    shared_key_id = getattr(user, "shared_key_id", None)
    if shared_key_id is not None:  # last: it locks the key until the request is written
        shared_keys.hold(
            session,
            user.id,
            shared_key_id,
            estimate=estimate,
            tokens=params["max_length"],
            tokens_param="params.max_length",
        )
    address = client_address if user.anonymous else None
    only, blocked = _worker_lists(loaded)
    values = dict(
        id=request_id or new_id(),
        user_id=user.id,
        shared_key_id=shared_key_id,
        state=WAITING,
        created_at=utcnow(),
        models=models,
        max_length=params["max_length"],
        max_context_length=params["max_context_length"],
        prompt_tokens=prompt_tokens,
        softprompt=loaded.get("softprompt"),
        only_workers=_bars(only),
        blocked_workers=_bars(blocked),
        trusted_only=loaded.get("trusted_workers", False),
        slow_workers=loaded.get("slow_workers", True),
        disable_batching=loaded.get("disable_batching", False),
        nsfw=loaded.get("nsfw", False),
        prompt=loaded["prompt"],
        params=params,
        webhook=loaded.get("webhook"),
        client_agent=client_agent.replace("\x00", "")[:300],
        client_address=client_address,
        n=n,
        waiting=n,
        kudos_estimate=estimate,
        usage_multiplier=multiplier,
        body_hash=body_hash,
        holders=holders,
        service_tier=tier.name,
        batch_line=tier.rate_scope is not None,
    )
    limit = tiers.BATCH_RATE_LIMIT if tier.rate_scope else settings.rate_limit_per_minute
    # A batch line is bounded by its batch's lines in flight (HORDE_BATCH_MAX_IN_FLIGHT), not the user's concurrency.
    bounded = not (user.anonymous or tier.rate_scope)
    concurrency = int(getattr(user, "concurrency", DEFAULT_CONCURRENCY)) if bounded else None
    bound = {"any_concurrency": concurrency is None, "concurrency": concurrency or 0, "in_flight_new": n}
    try:
        row = _ADMIT.run(session, values, limit=limit, client_address=tier.rate_scope or address, computed_params=bound)
    except errors.TooManyRequests:
        if concurrency is not None:
            _refuse_past_concurrency(session, user.id, concurrency, n)
        raise
    decided = {"priority": row.priority, "priority_class": row.priority_class, "upfront_paid": row.upfront_paid}
    request = TextRequest(**values, **decided)
    return Admitted(kudos=estimate, request=request, warnings=warnings)


def no_worker_message(request: TextRequest, online: list[Row], loaded: dict, lifetime_s: float) -> str | None:
    """The answer's warning when no online worker (of `online`) could take the request now."""
    why = unservable_reason(request, online, loaded)
    return NO_WORKER_MESSAGE.format(minutes=int(lifetime_s // 60), why=why) if why else None


def _refuse_past_concurrency(session: Session, user_id: int, concurrency: int, n: int) -> None:
    """429 TooManyPrompts when the user's generations in flight and the new request's `n` pass its concurrency
    (the INSERT's refusal, told apart from the rate's)."""
    in_flight = precompiled.execute(session.connection(), _IN_FLIGHT, {"user_id": user_id}).scalar() or 0
    if in_flight + n > concurrency:
        raise errors.TooManyPrompts(
            f"Parallel requests ({in_flight + n}) exceeded user limit ({concurrency}). Please try again later or "
            "request to increase your concurrency.",
            metadata={"in_flight": in_flight, "concurrency": concurrency},
        )


def _estimate(
    settings: Settings, models: list[str], params: dict, prompt_tokens: int, tier: tiers.Tier, multiplier: float
) -> int:
    """What the requester may pay: the price of every generation at its full length, as its tier pays it, times its
    usage multiplier (PUT /users/{id})."""
    price = pricing.estimate(
        models,
        n=params["n"],
        max_length=params["max_length"],
        prompt_tokens=prompt_tokens,
        reference_path=settings.model_reference_path,
    )
    return multiplied(tiers.requester_price(price, tier.name, settings.batch_price_factor), multiplier)


def _downgrade_or_refuse(session, settings, user, loaded, params, priced, online, queued, warnings) -> None:
    """Over the free allowance a request needs its estimate upfront, or (allow_downgrade) a smaller max_length.
    `priced`: the models, prompt tokens, tier and usage multiplier the estimate prices. A batch line has no free
    allowance."""
    models, prompt_tokens, tier, multiplier = priced
    threads = sum(worker.threads for worker in online)
    allowance = chat_pricing.free_allowance_tokens(threads, queued)
    wanted = params["max_length"] * params["n"]
    estimate = _estimate(settings, models, params, prompt_tokens, tier, multiplier)
    if wanted <= allowance and tier.free_allowance:
        return
    balance = accounts.locked_balance(session, user.id, lock=False)
    if balance >= estimate:
        return
    if loaded.get("allow_downgrade"):
        lowered = max(MIN_LENGTH_TOKENS, allowance // params["n"])
        warnings.append(
            {
                "code": "Downgraded",
                "message": f"max_length lowered from {params['max_length']} to "
                f"{lowered}: the request needs {estimate} kudos upfront.",
            }
        )
        params["max_length"] = lowered
        return
    why = (
        f"Due to demand, requests over {allowance} tokens (max_length × n) need the kudos upfront"
        if tier.free_allowance
        else "A batch line needs its kudos upfront"
    )
    raise errors.KudosUpfront(
        f"{why}; this one needs {estimate} and the API key has {balance}. Lower max_length or n, or send "
        "allow_downgrade.",
        param="params.max_length",
        metadata={"kudos_estimate": estimate, "kudos": balance, "free_allowance_tokens": allowance},
    )


def _worker_lists(loaded: dict) -> tuple[list[str], list[str]]:
    """`workers` is an allow-list, or a deny-list with worker_blacklist (true, or a list of ids to deny)."""
    listed = list(loaded.get("workers") or [])
    blacklist = loaded.get("worker_blacklist", False)
    if isinstance(blacklist, list):
        return listed, list(blacklist)
    return ([], listed) if blacklist else (listed, [])


def _bars(ids: list[str]) -> str | None:
    return ("|" + "|".join(ids) + "|") if ids else None


def unservable_reason(request: TextRequest, online: list[Row], loaded: dict) -> str | None:
    """Why no online worker could take the request now, or None when one could."""
    if not online:
        models = ", ".join(request.models) if request.models else "any model"
        return f"No text worker serving {models} is online."
    candidates = [w for w in online if (w.text_max_length or 0) >= request.max_length]
    if not candidates:
        return f"No online worker generates max_length {request.max_length} tokens."
    candidates = [w for w in candidates if (w.text_max_context_length or 0) >= request.max_context_length]
    if not candidates:
        return f"No online worker accepts max_context_length {request.max_context_length}."
    if request.softprompt:
        candidates = [w for w in candidates if request.softprompt in (w.softprompts or ())]
        if not candidates:
            return f"No online worker has the softprompt '{request.softprompt}'."
    only, blocked = _worker_lists(loaded)
    candidates = [w for w in candidates if (not only or w.id in only) and w.id not in blocked]
    if not candidates:
        return "No online worker matches the request's workers and worker_blacklist."
    if request.nsfw and not any(w.nsfw for w in candidates):
        return "No online worker accepts nsfw requests."
    return None
