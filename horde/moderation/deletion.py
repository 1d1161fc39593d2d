"""DELETE /api/v2/users/{id}: the user themself, or an admin, deletes a user (docs/reference/moderation.md).

The row stays, marked deleted (`deleted_at`): its ledger entries and its requests name it, and every sum of the
ledger stays exact (its balance is frozen as it was). In one transaction, with its audit record: its open
requests are cancelled (nothing more is charged for them), its workers are deleted as DELETE /workers/{id} deletes
one (their running jobs end with no reward), its shared keys are deleted, and its API key is replaced by a value
no key hashes to. Its keys stop working on every process from the next request (forget_identities). A moderator
or an admin is deleted only after the role is taken away (CannotDeleteMod), and the anonymous user never.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

from sqlalchemy import delete, or_, select, update
from sqlalchemy.orm import Session

from horde import errors
from horde.accounts.auth import forget_identities
from horde.accounts.identity import Identity
from horde.accounts.models import SharedKey, User
from horde.authz.check import authorize
from horde.authz.roles import Role
from horde.authz.rules import Action
from horde.chat import lifecycle as chat_lifecycle
from horde.chat.models import PROCESSING as CHAT_PROCESSING
from horde.chat.models import WAITING as CHAT_WAITING
from horde.chat.models import ChatRequest
from horde.events.bus import request_channel
from horde.moderation.users import live_user
from horde.oversight import trail
from horde.oversight.trail import Actor, Done, Target
from horde.registry import manage
from horde.storage.database import is_postgresql
from horde.text import lifecycle as text_lifecycle
from horde.text.models import PROCESSING as TEXT_PROCESSING
from horde.text.models import WAITING as TEXT_WAITING
from horde.text.models import TextRequest
from horde.timeutil import utcnow
from horde.workers.models import Worker

if TYPE_CHECKING:
    from horde.runtime import Runtime

#: What replaces a deleted user's key hash: no key hashes to it (a hash is 64 hexadecimal digits).
DELETED_KEY_PREFIX = "deleted:"


def delete_user(runtime: Runtime, caller: Identity, user_id: str, reason: str | None = None) -> dict:
    """SimpleResponse: OK, once the user is deleted."""
    with runtime.db.read() as session:
        target = live_user(session, user_id)
        target_id, role, anonymous = target.id, target.role, bool(target.anonymous)
    if anonymous:
        raise errors.AnonForbiddenUser("The anonymous user cannot be deleted.")
    authorize(caller, Action.DELETE_USER, owner_id=target_id)
    if role in (Role.MODERATOR, Role.ADMIN):
        raise errors.CannotDeleteMod(
            "You cannot delete a user that is a moderator or an admin: an admin takes the role away first."
        )
    remove(runtime, Actor.of(caller), target_id, reason)
    return {"message": "OK"}


def remove(runtime: Runtime, actor: Actor, user_id: int, reason: str | None = None) -> None:
    """Delete user `user_id` (the module's rule), for the API and the operator's command line alike."""
    with runtime.db.transaction() as session:
        cancelled = _cancel_open_requests(session, runtime, user_id)
        workers = list(
            session.scalars(select(Worker.id).where(Worker.owner_id == user_id, Worker.deleted_at.is_(None)))
        )
        for worker_id in workers:
            manage.retire(session, worker_id)
        query = select(User).where(User.id == user_id, User.deleted_at.is_(None))
        user = session.scalars(query.with_for_update() if is_postgresql(session) else query).first()
        if user is None:
            raise errors.UserNotFound(f"User with ID '{user_id}' not found.", param="user_id")
        keys = session.execute(delete(SharedKey).where(SharedKey.user_id == user_id)).rowcount  # type: ignore[attr-defined]
        session.execute(
            update(User)
            .where(User.id == user_id)
            .values(deleted_at=utcnow(), api_key_hash=f"{DELETED_KEY_PREFIX}{uuid.uuid4().hex}"),
            execution_options={"synchronize_session": False},
        )
        before = {
            "username": user.username,
            "kudos": user.kudos,
            "workers": workers,
            "shared_keys": keys,
            "cancelled_requests": len(cancelled),
        }
        trail.record(session, actor, Done.DELETE_USER, Target.USER, user_id, before=before, reason=reason)
    forget_identities(runtime)
    for request_id in cancelled:
        runtime.bus.publish(request_channel(request_id))
    manage.end_expired_jobs(runtime)


def _cancel_open_requests(session: Session, runtime: Runtime, user_id: int) -> list[str]:
    """Cancel the user's chat and text requests waiting or running, under their row locks: those running end with
    nothing more charged. Their ids, to publish once committed."""
    cancelled = []
    chat_open = select(ChatRequest.id).where(
        ChatRequest.user_id == user_id, or_(ChatRequest.state == CHAT_WAITING, ChatRequest.state == CHAT_PROCESSING)
    )
    for request_id in session.scalars(chat_open).all():
        request = chat_lifecycle.lock_request(session, request_id)
        if chat_lifecycle.cancel(session, runtime.settings, request):
            cancelled.append(request_id)
    text_open = select(TextRequest.id).where(
        TextRequest.user_id == user_id, or_(TextRequest.state == TEXT_WAITING, TextRequest.state == TEXT_PROCESSING)
    )
    for request_id in session.scalars(text_open).all():
        text_request = text_lifecycle.lock_request(session, request_id)
        if text_request is not None and text_lifecycle.cancel(session, text_request, running=True):
            cancelled.append(request_id)
    return cancelled
