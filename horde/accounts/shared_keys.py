"""Shared keys (the AI Horde's /sharedkeys): a key a user hands out to lend their kudos, within limits.

A request sent with a shared key (as `apikey`, or the front's bearer key) is its owner's request, charged to
the owner, within the key's limits: its expiry, its `max_text_tokens` per request, and its `kudos` in all.

The kudos limit holds under concurrency by reservation. Admission (`hold`) takes the key's row lock and admits
the request only while what the key has utilized, plus what its requests still waiting or processing may yet
cost (their estimate less what they were charged: `holds_in`), plus this request's estimate, stay within the
limit. A settlement adds its charge to `utilized` in the statement that charges the owner
(horde/accounts/service.py), and a request through a shared key is charged at most what it reserved
(horde/chat/replies.py, horde/text/lifecycle.py): what it charges leaves its reservation as it enters `utilized`,
so `utilized` never passes the limit. A request's reservation ends with it, whichever way it ends, with nothing to
release: it is read from the requests themselves.
"""

from __future__ import annotations

import datetime as dt
import uuid
from email.utils import format_datetime
from typing import Any

from sqlalchemy import Integer, String, Table, bindparam, func, literal, or_, select
from sqlalchemy.orm import Session

from horde import errors
from horde.accounts import names, rate_limit
from horde.accounts.identity import Identity
from horde.accounts.models import SharedKey, User
from horde.authz.check import authorize
from horde.authz.rules import Action
from horde.storage import precompiled
from horde.storage.database import is_postgresql, table_of
from horde.timeutil import utcnow

UNLIMITED = -1
#: How many shared keys a user may have, as on the AI Horde: more for a trusted user.
MAX_KEYS = 3
MAX_KEYS_TRUSTED = 10
#: The input's limits (the AI Horde's SharedKeyInput).
MAX_KUDOS = 50_000_000
MAX_IMAGE_PIXELS = 4_194_304
MAX_IMAGE_STEPS = 500
MAX_TEXT_TOKENS = 500
DEFAULT_KUDOS = 5000
NAME_CHARS = (3, 255)
#: The fields of the AI Horde's SharedKeyInput named otherwise in the table (`kudos`, a word many statements bind).
_COLUMN_OF_FIELD = {"kudos": "kudos_limit"}

_KEYS, _USERS = table_of(SharedKey), table_of(User)
_READ = (
    select(_KEYS, _USERS.c.username, _USERS.c.anonymous)
    .join_from(_KEYS, _USERS, _USERS.c.id == _KEYS.c.user_id)
    .where(_KEYS.c.id == bindparam("key", type_=String))
)
_LOCK = select(_KEYS).where(_KEYS.c.id == bindparam("key", type_=String)).with_for_update()
_UNLOCKED = select(_KEYS).where(_KEYS.c.id == bindparam("key", type_=String))
_TOP_UP = (
    _KEYS.update()
    .where(_KEYS.c.id == bindparam("key", type_=String), _KEYS.c.kudos_limit != UNLIMITED)
    .values(kudos_limit=_KEYS.c.kudos_limit + bindparam("amount", type_=Integer))
)
#: The request tables whose open requests hold kudos of their shared key (holds_in): chat's and text's, which the
#: accounts cannot import (they are above them).
_HOLDERS: dict[str, tuple[Table, tuple[str, ...]]] = {}
_held_statement: list[Any] = []


def holds_in(requests: Table, open_states: tuple[str, ...]) -> None:
    """Count the requests of `requests` (a table with shared_key_id, state, kudos_estimate and kudos_charged) in
    `open_states` as holding their estimate, less what they were charged, of their shared key. Each request
    domain calls it as it is imported; the server imports them all (horde/api.py)."""
    _HOLDERS[requests.name] = (requests, open_states)
    _held_statement.clear()


def _held() -> Any:
    """SELECT the kudos the open requests of shared key `key` hold, across every table of holds_in."""
    if not _held_statement:
        parts = [
            select(func.coalesce(func.sum(table.c.kudos_estimate - table.c.kudos_charged), 0))
            .where(
                table.c.shared_key_id == bindparam("key", type_=String),
                or_(*(table.c.state == state for state in states)),
            )
            .scalar_subquery()
            for table, states in _HOLDERS.values()
        ]
        total: Any = sum(parts[1:], parts[0]) if parts else literal(0)
        _held_statement.append(select(total))
    return _held_statement[0]


def canonical_id(value: str | None) -> str | None:
    """A shared key's id in its stored form, or None when `value` is no UUID (so never one)."""
    if not value or len(value) > 64:
        return None
    try:
        return str(uuid.UUID(value))
    except ValueError:
        return None


def owner_of(session: Session, key: str | None) -> User | None:
    """The owner of shared key `key`, or None when it is none: for authentication, which reads no limit (every
    request's admission reads them afresh)."""
    key_id = canonical_id(key)
    if key_id is None:
        return None
    return session.scalar(select(User).join(SharedKey, SharedKey.user_id == User.id).where(SharedKey.id == key_id))


def _not_found(key_id: str) -> errors.HordeError:
    return errors.InvalidAPIKey(f"No user matching sent Shared Key '{key_id}'.")


def read(session: Session, key_id: str) -> dict:
    """GET /sharedkeys/{id}: anyone holding the id may read it (the AI Horde's rule: the id is the key)."""
    row = precompiled.execute(session.connection(), _READ, {"key": canonical_id(key_id) or ""}).first()
    if row is None:
        raise _not_found(key_id)
    return details(row)


def details(row: Any) -> dict:
    """The AI Horde's SharedKeyDetails of a key row (with its owner's username and anonymity)."""
    answer = {
        "id": row.id,
        "username": names.alias(row.username, row.user_id, anonymous=row.anonymous),
        "name": row.name,
        "kudos": row.kudos_limit,
        "expiry": _rfc822(row.expires_at),
        "utilized": row.utilized,
        "max_image_pixels": row.max_image_pixels,
        "max_image_steps": row.max_image_steps,
        "max_text_tokens": row.max_text_tokens,
    }
    return {key: value for key, value in answer.items() if value is not None}


def _rfc822(moment: dt.datetime | None) -> str | None:
    """As flask-restx's rfc822 DateTime, which the AI Horde answers: 'Tue, 05 Aug 2025 12:00:00 -0000'."""
    return None if moment is None else format_datetime(moment.replace(tzinfo=None))


def _expires_at(days: int) -> dt.datetime | None:
    return None if days == UNLIMITED else utcnow() + dt.timedelta(days=days)


def create(session: Session, owner: Identity, fields: dict) -> dict:
    """POST (or PUT) /sharedkeys: a new key of `owner`, at most MAX_KEYS (MAX_KEYS_TRUSTED) a user, counted under
    the owner's row lock so that concurrent creations count each other."""
    authorize(owner, Action.CREATE_SHARED_KEY)
    query = select(User.id).where(User.id == owner.id)
    session.scalar(query.with_for_update() if is_postgresql(session) else query)
    most = MAX_KEYS_TRUSTED if owner.trusted else MAX_KEYS
    held = session.scalar(select(func.count()).select_from(SharedKey).where(SharedKey.user_id == owner.id)) or 0
    if held >= most:
        raise errors.Forbidden(f"You cannot have more than {most} shared keys.")
    key = SharedKey(
        id=str(uuid.uuid4()),
        user_id=owner.id,
        name=fields.get("name"),
        kudos_limit=fields.get("kudos", DEFAULT_KUDOS),
        utilized=0,
        expires_at=_expires_at(fields.get("expiry", UNLIMITED)),
        max_image_pixels=fields.get("max_image_pixels", UNLIMITED),
        max_image_steps=fields.get("max_image_steps", UNLIMITED),
        max_text_tokens=fields.get("max_text_tokens", UNLIMITED),
        created_at=utcnow(),
    )
    session.add(key)
    session.flush()
    return read(session, key.id)


def update(session: Session, owner: Identity, key_id: str, fields: dict) -> dict:
    """PATCH /sharedkeys/{id} by its owner: `expiry` counts its days from now; a lowered `kudos` lets the requests
    already admitted finish."""
    key = _owned(session, owner, key_id)
    if not fields:
        raise errors.NoSharedKeyModSelected("No shared key modification selected!")
    for name, value in fields.items():
        if name == "expiry":
            key.expires_at = _expires_at(value)
        else:
            setattr(key, _COLUMN_OF_FIELD.get(name, name), value)
    session.flush()
    return read(session, key.id)


def delete(session: Session, owner: Identity, key_id: str) -> None:
    """DELETE /sharedkeys/{id} by its owner; its requests still running finish, charged to the owner."""
    session.delete(_owned(session, owner, key_id))


def _owned(session: Session, owner: Identity, key_id: str) -> SharedKey:
    """The key, locked, when the authorization table lets `owner` change it: its owner's own API key alone."""
    found = canonical_id(key_id)
    key = session.get(SharedKey, found, with_for_update=is_postgresql(session)) if found else None
    if key is None:
        raise _not_found(key_id)
    authorize(owner, Action.CHANGE_SHARED_KEY, owner_id=key.user_id)
    return key


def top_up(session: Session, key_id: str, amount: int) -> None:
    """A kudos transfer to a shared key raises its limit by what it brought (unless it has none)."""
    precompiled.execute(session.connection(), _TOP_UP, {"key": key_id, "amount": amount})


def text_tokens_limit(session: Session, key_id: str) -> int:
    """The key's max_text_tokens (UNLIMITED when it has none or is gone: admission refuses a gone key)."""
    row = precompiled.execute(session.connection(), _UNLOCKED, {"key": key_id}).first()
    return UNLIMITED if row is None else row.max_text_tokens


def hold(session: Session, owner_id: int, key_id: str, *, estimate: int, tokens: int, tokens_param: str) -> None:
    """Admit a request of `estimate` kudos asking for `tokens` tokens (its `tokens_param`) through shared key
    `key_id` of user `owner_id`, or refuse it: call it last before the request's INSERT, in its transaction.

    On PostgreSQL it first takes the owner's rate turn (which the INSERT takes too, so an admission holding the
    key never waits for a turn another holds while it waits for the key), then locks the key's row until the
    transaction ends: admissions through one key are checked one after the other, each counting those before it.
    Every settlement locks the key after its users, as this does (after chat's lock of the caller's balance)."""
    postgres = is_postgresql(session)
    if postgres:
        rate_limit.take_turn(session, owner_id, None)
    connection = session.connection()
    key = precompiled.execute(connection, _LOCK if postgres else _UNLOCKED, {"key": key_id}).first()
    if key is None:
        raise _not_found(key_id)
    _refuse_expired(key)
    if key.kudos_limit != UNLIMITED:
        if key.utilized >= key.kudos_limit:
            raise errors.SharedKeyEmpty("This shared key has run out of kudos.")
        held = precompiled.execute(connection, _held(), {"key": key_id}).scalar() or 0
        left = key.kudos_limit - key.utilized - held
        if estimate > left:
            raise errors.SharedKeyInsufficientKudos(
                f"This shared key does not have enough remaining kudos ({max(0, left)}) to fulfill this request "
                f"({estimate}).",
                metadata={"kudos_estimate": estimate, "kudos_left": max(0, left), "kudos_held": held},
            )
    refuse_above_tokens(key.max_text_tokens, tokens, tokens_param)


def refuse_above_tokens(limit: int, tokens: int, tokens_param: str) -> None:
    if limit != UNLIMITED and tokens > limit:
        raise errors.BadRequest(
            f"This shared key is limited to {limit} tokens per job. You requested {tokens} tokens.",
            param=tokens_param,
        )


def _refuse_expired(key: Any) -> None:
    if key.expires_at is not None and key.expires_at <= utcnow():
        raise errors.SharedKeyExpired("This shared key has expired.")
