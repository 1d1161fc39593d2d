"""The chat tables as a client's request touches them: SQLAlchemy Core statements built once per process.

On the client's hot path (admit, follow, answer) the ORM's Session.get, unit of work and per-call statement
building cost more CPU than the database's own work (issue 12). These statements are built at import, so
their cache keys are memoized on the objects, and they run on the session's connection: same transaction,
same outage handling, no unit of work. Requests come back as transient ChatRequest objects: read them, never
add them to a session.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any, cast

from sqlalchemy import Integer, Select, String, Table, bindparam, case, func, insert, or_, select, type_coerce
from sqlalchemy.dialects import postgresql
from sqlalchemy.orm import Session
from sqlalchemy.orm.instrumentation import manager_of_class

from horde.accounts import rate_limit
from horde.accounts.models import User
from horde.chat.models import FINAL_STATES, ChatRequest, ChatRequestModel
from horde.database import table_of
from horde.workers.models import Worker

REQUESTS = table_of(ChatRequest)
REQUEST_MODELS = table_of(ChatRequestModel)
USERS = table_of(User)
WORKERS = table_of(Worker)

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
_INSERT_REQUEST = insert(REQUESTS)
_INSERT_REQUEST_MODEL = insert(REQUEST_MODELS)
_REQUEST_CLASS = manager_of_class(ChatRequest)


def _caller_statement(per_address: bool):
    """The caller's balance and its requests of every kind since `since` (from `client_address` only when
    `per_address`): chat and text share one budget (horde/accounts/rate_limit.py)."""
    used = rate_limit.used_since(by_address=per_address)
    return select(USERS.c.kudos, type_coerce(used, Integer).label("used")).where(USERS.c.id == bindparam("user_id"))


#: Built on first use, once every kind has declared its requests table; keyed by the tables it counts.
_CALLER: dict[tuple[bool, tuple[Table, ...]], Select] = {}

#: Every worker with its owner's trust, in one round trip. A row has the Worker columns by name.
_ROSTER = select(
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
).join_from(WORKERS, USERS, WORKERS.c.owner_id == USERS.c.id)


def _transient(values: Mapping[Any, Any]) -> ChatRequest:
    """A ChatRequest holding `values`, filled the way the ORM's loader fills one: straight into the instance's
    dict, without the attribute events of the constructor (30 times cheaper; no history to flush, ever)."""
    request = _REQUEST_CLASS.new_instance()
    request.__dict__.update(values)
    return request


def read_request(session: Session, request_id: str) -> ChatRequest | None:
    """The whole row, as a transient ChatRequest (one statement, no identity map)."""
    row = session.connection().execute(_READ_REQUEST, {"request_id": request_id}).first()
    return None if row is None else _transient(row._mapping)


def follow_request(session: Session, request_id: str) -> ChatRequest | None:
    """The row for a waiter, which rereads it on every event (each progress of a stream): its payload is
    None until the request is final, so that a long prompt is not decoded again on every read."""
    row = session.connection().execute(_FOLLOW_REQUEST, {"request_id": request_id}).first()
    return None if row is None else _transient(row._mapping)


def read_state(session: Session, request_id: str) -> str | None:
    return session.connection().execute(_READ_STATE, {"request_id": request_id}).scalar()


def caller(session: Session, user_id: int, since: dt.datetime, client_address: str | None) -> tuple[int, int]:
    """(balance, requests created since `since`) of the user; counted from `client_address` alone when given."""
    key = (client_address is not None, rate_limit.counted_tables())
    statement = _CALLER.get(key)
    if statement is None:
        statement = _CALLER[key] = _caller_statement(key[0])
    params: dict[str, Any] = {"user_id": user_id, "since": since, "client_address": client_address}
    row = session.connection().execute(statement, params).one()
    return row.kudos, row.used


def roster(session: Session) -> tuple[list[Worker], dict[int, bool]]:
    """(every worker, its owner's trust by owner id). The workers are rows carrying the Worker columns that
    admission reads (declarations, lengths, threads, last pop), not ORM objects."""
    rows = session.connection().execute(_ROSTER).all()
    trust = {row.owner_id: bool(row.owner_trusted) for row in rows}
    return cast(list[Worker], list(rows)), trust


def _insert_with_models_statement():
    """PostgreSQL: the request and its model rows in one INSERT (one round trip), the request's INSERT as a
    data-modifying CTE. Parameters: `new_<column>` for every column but the reply, and `model_names`."""
    columns = [column for column in REQUESTS.c if column.name != "reply"]
    created = (
        insert(REQUESTS)
        .values({column.name: bindparam(f"new_{column.name}", type_=column.type) for column in columns})
        .returning(REQUESTS.c.id)
        .cte("created")
    )
    model_names = func.unnest(bindparam("model_names", type_=postgresql.ARRAY(String)))
    return insert(REQUEST_MODELS).from_select(["request_id", "model"], select(created.c.id, model_names))


_INSERT_WITH_MODELS = _insert_with_models_statement()


def insert_request(session: Session, values: dict[str, Any]) -> ChatRequest:
    """Insert a request and one row per model it accepts; `values` names every column but the reply."""
    connection = session.connection()
    models = list(dict.fromkeys(values["models"]))
    if connection.dialect.name == "postgresql":
        params = {f"new_{name}": value for name, value in values.items()}
        connection.execute(_INSERT_WITH_MODELS, dict(params, model_names=models))
    else:  # SQLite has no INSERT in a CTE; its statements cost no round trip anyway
        connection.execute(_INSERT_REQUEST, values)
        connection.execute(_INSERT_REQUEST_MODEL, [{"request_id": values["id"], "model": model} for model in models])
    return _transient(values)
