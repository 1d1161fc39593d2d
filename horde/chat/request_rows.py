"""The chat tables as a client's request touches them: SQLAlchemy Core statements built once per process.

On the client's hot path (admit, follow, answer) the ORM's Session.get, unit of work and per-call statement
building cost more CPU than the database's own work (issue 12). These statements are built at import, so
their cache keys are memoized on the objects, and they run on the session's connection: same transaction,
same outage handling, no unit of work. Requests come back as transient ChatRequest objects: read them, never
add them to a session.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from sqlalchemy import (
    ColumnElement,
    String,
    and_,
    bindparam,
    case,
    func,
    insert,
    or_,
    select,
    type_coerce,
)
from sqlalchemy.orm import Session
from sqlalchemy.orm.instrumentation import manager_of_class

from horde import errors
from horde.accounts import rate_limit, shared_keys
from horde.accounts.models import User
from horde.chat import affinity, tiers
from horde.chat.models import (
    COUNTED_IN_FLIGHT_SQL,
    FINAL_STATES,
    PRIORITY_CLASS_KUDOS,
    PRIORITY_CLASS_OTHERS,
    PROCESSING,
    WAITING,
    ChatRequest,
    ChatRequestModel,
    counted_in_flight,
)
from horde.storage import precompiled
from horde.storage.database import table_of
from horde.workers.models import Worker
from horde.workers.service import online_cutoff

REQUESTS = table_of(ChatRequest)
REQUEST_MODELS = table_of(ChatRequestModel)
USERS = table_of(User)
WORKERS = table_of(Worker)
shared_keys.holds_in(REQUESTS, (WAITING, PROCESSING))

_READ_REQUEST = select(REQUESTS).where(REQUESTS.c.id == bindparam("request_id"))
#: The row as a waiter follows it: the payload (the prompt, possibly large) only once the request is final.
#: A request that has ended. The final states are compared one by one: an IN of a list is expanded into the
#: SQL on every execution.
ENDED = or_(*(REQUESTS.c.state == state for state in FINAL_STATES))
_FOLLOW_REQUEST = select(
    *(column for column in REQUESTS.c if column.name != "payload"),
    type_coerce(case((ENDED, REQUESTS.c.payload)), REQUESTS.c.payload.type).label("payload"),
).where(REQUESTS.c.id == bindparam("request_id"))
_READ_STATE = select(REQUESTS.c.state).where(REQUESTS.c.id == bindparam("request_id"))
_INSERT_REQUEST_MODEL = insert(REQUEST_MODELS)
_REQUEST_CLASS = manager_of_class(ChatRequest)


#: The workers that popped since `cutoff` with their owners' trust, in one round trip (by the index of last pops).
#: A row has the Worker columns by name.
_ROSTER = (
    select(
        WORKERS.c.id,
        WORKERS.c.name,
        WORKERS.c.owner_id,
        WORKERS.c.models,
        WORKERS.c.max_length,
        WORKERS.c.max_context_length,
        WORKERS.c.threads,
        WORKERS.c.features_mask,
        WORKERS.c.guarantees_mask,
        WORKERS.c.max_temperature_with_tools,
        WORKERS.c.last_pop_at,
        USERS.c.trusted.label("owner_trusted"),
    )
    .join_from(WORKERS, USERS, WORKERS.c.owner_id == USERS.c.id)
    .where(WORKERS.c.last_pop_at >= bindparam("cutoff"))
)


def transient(values: Mapping[Any, Any]) -> ChatRequest:
    """A ChatRequest holding `values`, filled the way the ORM's loader fills one: straight into the instance's
    dict, without the attribute events of the constructor (30 times cheaper; no history to flush, ever)."""
    request = _REQUEST_CLASS.new_instance()
    request.__dict__.update(values)
    return request


def refuse_past_concurrency(session: Session, user_id: int, concurrency: int) -> None:
    """429 TooManyPrompts when the user has `concurrency` chat requests in flight (the INSERT's refusal, told
    apart from the rate's)."""
    in_flight = precompiled.execute(session.connection(), _IN_FLIGHT, {"user_id": user_id}).scalar() or 0
    if in_flight >= concurrency:
        raise errors.TooManyPrompts(
            f"Parallel requests ({in_flight + 1}) exceeded user limit ({concurrency}). Please try again later or "
            "request to increase your concurrency.",
            metadata={"in_flight": in_flight, "concurrency": concurrency},
        )


def read_request(session: Session, request_id: str) -> ChatRequest | None:
    """The whole row, as a transient ChatRequest (one statement, no identity map)."""
    row = precompiled.execute(session.connection(), _READ_REQUEST, {"request_id": request_id}).first()
    return None if row is None else transient(row._mapping)


def follow_request(session: Session, request_id: str) -> ChatRequest | None:
    """The row for a waiter, which rereads it on every event (each progress of a stream): its payload is
    None until the request is final, so that a long prompt is not decoded again on every read."""
    row = precompiled.execute(session.connection(), _FOLLOW_REQUEST, {"request_id": request_id}).first()
    return None if row is None else transient(row._mapping)


def read_state(session: Session, request_id: str) -> str | None:
    return precompiled.execute(session.connection(), _READ_STATE, {"request_id": request_id}).scalar()


def roster(session: Session, online_window_s: float) -> tuple[list[Worker], dict[int, bool]]:
    """(the workers online now, their owners' trust by owner id). The workers are rows carrying the Worker columns
    that admission reads (declarations, lengths, threads, last pop), not ORM objects. Only the online ones: a
    Horde's retired workers would make every admission's walk of the roster grow with its history; the models
    they declared stay known (known_models)."""
    rows = precompiled.execute(session.connection(), _ROSTER, {"cutoff": online_cutoff(online_window_s)}).all()
    trust = {row.owner_id: bool(row.owner_trusted) for row in rows}
    return cast(list[Worker], list(rows)), trust


_KUDOS_FIRST = and_(USERS.c.kudos > 0, USERS.c.anonymous.is_(False))
#: A flex request's priority is set back below every interactive one of its class (horde/chat/tiers.py); the bind
#: parameter is the row's own service_tier, as the INSERT binds it (rate_limit.InsertBelowLimit names it new_...).
_FLEX_SET_BACK = case((bindparam("new_service_tier", type_=String) == tiers.FLEX, tiers.FLEX_PRIORITY_OFFSET), else_=0)
#: A request's priority and priority class from its caller's balance, worked out by the admission's INSERT as it
#: reads the caller's row (PRIORITY_CALLER joins it): chat's and text's admissions alike.
PRIORITY_FROM_BALANCE = {
    "priority": case(
        (USERS.c.kudos > tiers.MAX_PRIORITY, tiers.MAX_PRIORITY), (USERS.c.kudos > 0, USERS.c.kudos), else_=0
    )
    - _FLEX_SET_BACK,
    "priority_class": case((_KUDOS_FIRST, PRIORITY_CLASS_KUDOS), else_=PRIORITY_CLASS_OTHERS),
}
PRIORITY_CALLER = USERS.c.id == bindparam("user_id")
_OPEN = REQUESTS.alias("open_requests")
#: The caller's (bind parameter `user_id`) chat requests waiting or running, by the partial index that holds them.
_IN_FLIGHT = (
    select(func.count())
    .select_from(_OPEN)
    .where(
        _OPEN.c.user_id == bindparam("user_id"),
        counted_in_flight(_OPEN.c.state),
    )
)
#: PostgreSQL: the same count once the caller's turn is taken (accounts/rate_limit.py count_under_turn_sql).
IN_FLIGHT_FUNCTION = "horde_chat_in_flight"
IN_FLIGHT_FUNCTION_SQL = rate_limit.count_under_turn_sql(
    IN_FLIGHT_FUNCTION,
    f"SELECT count(*) FROM {REQUESTS.name} WHERE user_id = caller AND {COUNTED_IN_FLIGHT_SQL}",
)


def within_concurrency(postgres: bool) -> list[ColumnElement[bool]]:
    """Within the caller's concurrency, this request added (accounts/rate_limit.py within_concurrency)."""
    return rate_limit.within_concurrency(postgres, IN_FLIGHT_FUNCTION, _IN_FLIGHT)


#: The request's INSERT below the caller's rate limit and within its concurrency, with its priority from the
#: caller's balance as the INSERT reads it.
_ADMIT = rate_limit.InsertBelowLimit(
    REQUESTS,
    REQUEST_MODELS,
    returning=("priority", "priority_class", "reserved_worker_id"),
    computed=PRIORITY_FROM_BALANCE | {"reserved_worker_id": affinity.RESERVED_AT_ADMISSION},
    where=(PRIORITY_CALLER,),
    where_by_database=within_concurrency,
)


def admit_request(
    session: Session,
    values: dict[str, Any],
    *,
    limit: int,
    rate_address: str | None,
    affinity_workers: str = "",
    concurrency: int | None = None,
) -> ChatRequest:
    """Insert a request and one row per model it accepts, unless the caller has `limit` requests of the rate
    window (counted from `rate_address` alone when given), or `concurrency` requests in flight (None: no bound):
    429 then (TooManyPrompts for the latter), with nothing written. `values` names every column but the reply,
    the priority, which comes from the caller's balance, and the reserved worker: the conversation's worker when
    `affinity_workers` lists it (horde/chat/affinity.py)."""
    bound = {"any_concurrency": concurrency is None, "concurrency": concurrency or 0}
    try:
        row = _ADMIT.run(
            session,
            values,
            limit=limit,
            client_address=rate_address,
            computed_params={"affinity_workers": affinity_workers} | bound,
        )
    except errors.TooManyRequests:
        if concurrency is not None:
            refuse_past_concurrency(session, values["user_id"], concurrency)
        raise
    return transient(
        dict(
            values,
            reply=None,
            priority=row.priority,
            priority_class=row.priority_class,
            reserved_worker_id=row.reserved_worker_id,
        )
    )
