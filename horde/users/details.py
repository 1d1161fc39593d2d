"""The AI Horde's UserDetails body, as /find_user, /users/{id} and /users answer it.

Three views, as on the AI Horde: the public one (anyone: the user's standing, what moderators set of its
concurrency, invitation, role, trust and flag, and its `worker_ids` when it shows them, `public_workers`); the
user's own (its own API key), which adds what only the user may see: `worker_ids`, `sharedkey_ids`, `contact`,
`active_generations`; and a moderator's, which adds the moderators' note (`admin_comment`) to the user's own.
What this Horde has no notion of (styles, monthly kudos, suspicion, image work) is present with the AI Horde's
neutral value; see docs/reference/accounts.md for which is which.

Every figure of a user is read from its row (the running totals of horde/accounts/moves.py), its workers and
shared keys, and its open requests: none walks the user's history.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from horde.accounts import names
from horde.accounts.models import SharedKey, User
from horde.authz.roles import Role
from horde.chat import models as chat_models
from horde.chat.models import ChatRequest
from horde.text import models as text_models
from horde.text.models import TextRequest
from horde.timeutil import utcnow
from horde.workers.models import Worker

#: The AI Horde's page of /users, and the last page it answers (later ones are empty).
PAGE_SIZE = 25
LAST_PAGE = 10_000
SORTS = ("kudos", "age")
#: The most ids listed per kind of active generation (a user's open requests), newest first.
MAX_ACTIVE_LISTED = 1000
_IMAGE_AMOUNTS = {"image": 0, "interrogation": 0}
#: The roles the AI Horde's `moderator` flag reports (an admin moderates too).
MODERATING_ROLES = (Role.MODERATOR.value, Role.ADMIN.value)


def find(
    session: Session, user_id: int, *, own: bool, moderator: bool = False, shared_key_name: str | None = None
) -> dict:
    """The details of user `user_id` (an id of the users table), in its own view when `own`, in a moderator's when
    `moderator`. With `shared_key_name` (the caller sent a shared key: "" when it has no name), the public view
    with the username marked as the AI Horde marks it."""
    user = session.get_one(User, user_id)
    body = details(user, _worker_counts(session, [user.id]).get(user.id, 0))
    if user.public_workers and not (own or moderator):
        body["worker_ids"] = _worker_ids(session, user.id)
    if own or moderator:
        body |= _own_view(session, user)
    if moderator:
        body["admin_comment"] = user.admin_comment
    if shared_key_name is not None:
        body["username"] += f" (Shared Key{': ' + shared_key_name if shared_key_name else ''})"
    return body


def page(session: Session, number: int, sort: str) -> list[dict]:
    """Page `number` (from 1) of every live user's public details, by kudos (most first) or age (oldest first)."""
    if number > LAST_PAGE:
        return []
    order = (User.created_at, User.id) if sort == "age" else (User.kudos.desc(), User.id)
    live = select(User).where(User.deleted_at.is_(None))
    users = session.scalars(live.order_by(*order).offset((max(1, number) - 1) * PAGE_SIZE).limit(PAGE_SIZE))
    listed = list(users)
    counts = _worker_counts(session, [user.id for user in listed])
    return [details(user, counts.get(user.id, 0)) for user in listed]


def details(user: User, worker_count: int, now: dt.datetime | None = None) -> dict:
    """The public view of `user`, which owns `worker_count` workers."""
    anonymous = bool(user.anonymous)
    return {
        "username": names.alias(user.username, user.id, anonymous=anonymous),
        "id": names.public_id(user.id, anonymous=anonymous),
        "kudos": float(user.kudos),
        "kudos_details": {
            "accumulated": float(user.kudos_accumulated),
            "gifted": float(user.kudos_gifted),
            "donated": 0.0,
            "admin": float(user.kudos_admin),
            "received": float(user.kudos_received),
            "recurring": 0.0,
            "awarded": float(user.kudos_awarded),
            "styled": 0.0,
        },
        "usage": {"megapixelsteps": 0.0, "requests": 0},
        "contributions": {"megapixelsteps": 0.0, "fulfillments": 0},
        "records": {
            "usage": {"megapixelsteps": 0.0, "tokens": user.requested_tokens},
            "contribution": {"megapixelsteps": 0.0, "tokens": user.fulfilled_tokens},
            "fulfillment": {**_IMAGE_AMOUNTS, "text": user.fulfilled_generations},
            "request": {**_IMAGE_AMOUNTS, "text": user.requested_generations},
            "style": {**_IMAGE_AMOUNTS, "text": 0},
        },
        "concurrency": user.concurrency,
        "worker_invited": user.worker_invited,
        "moderator": user.role in MODERATING_ROLES,
        "trusted": bool(user.trusted),
        "flagged": bool(user.flagged),
        "pseudonymous": not anonymous,
        "worker_count": worker_count,
        "account_age": max(0, int(((now or utcnow()) - user.created_at).total_seconds())),
        "service": False,
        "deleted": user.deleted_at is not None,
        "education": False,
        "customizer": False,
        "styles": [],
    }


def _own_view(session: Session, user: User) -> dict:
    """What only the user sees of itself. The anonymous user's requests are everyone's: none is listed."""
    if user.anonymous:
        text: list[str] = []
        chat: list[str] = []
    else:
        text = _open_requests(session, TextRequest, user.id, (text_models.WAITING, text_models.PROCESSING))
        chat = _open_requests(session, ChatRequest, user.id, (chat_models.WAITING, chat_models.PROCESSING))
    return {
        "worker_ids": _worker_ids(session, user.id),
        "sharedkey_ids": list(
            session.scalars(select(SharedKey.id).where(SharedKey.user_id == user.id).order_by(SharedKey.created_at))
        ),
        "contact": user.contact,
        "vpn": False,
        "special": False,
        # chat: the Horde's own chat requests (GET /api/v2/generate/chat/status/{id}), beside the AI Horde's kinds
        "active_generations": {"text": text, "image": [], "alchemy": [], "chat": chat},
        "monthly_kudos": {"amount": 0},
        "evaluating_kudos": 0.0,
        "suspicious": 0,
    }


def _worker_ids(session: Session, user_id: int) -> list[str]:
    query = select(Worker.id).where(Worker.owner_id == user_id, Worker.deleted_at.is_(None)).order_by(Worker.id)
    return list(session.scalars(query))


def _open_requests(session: Session, table: Any, user_id: int, states: Sequence[str]) -> list[str]:
    """The ids of the user's requests in `states` (waiting, processing), at most MAX_ACTIVE_LISTED, in no set
    order. A query per state, led by it: the queue's index finds the requests of a state however long the
    user's history (an order by age would walk the user's finished requests)."""
    found: list[str] = []
    for state in states:
        query = select(table.id).where(table.state == state, table.user_id == user_id)
        found += session.scalars(query.limit(MAX_ACTIVE_LISTED - len(found)))
        if len(found) >= MAX_ACTIVE_LISTED:
            break
    return found


def _worker_counts(session: Session, user_ids: list[int]) -> dict[int, int]:
    if not user_ids:
        return {}
    query = (
        select(Worker.owner_id, func.count())
        .where(Worker.owner_id.in_(user_ids), Worker.deleted_at.is_(None))  # a deleted worker is no longer theirs
        .group_by(Worker.owner_id)
    )
    return {row[0]: row[1] for row in session.execute(query)}
