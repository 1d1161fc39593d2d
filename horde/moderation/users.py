"""PUT /api/v2/users/{id}: a moderator (some fields: an admin; some: the user themself) changes a user, as the AI
Horde's ModifyUserInput names it.

Every field is checked against the authorization table before anything is written (the AI Horde writes the
fields it checked before it refuses a later one; here a refusal writes nothing), then every change is one
transaction with its audit record: a change of kudos is one ledger entry (an adjustment naming the admin), under
the user's row lock. A change that the caller's identity carries (role, trust, flag, concurrency, multiplier,
name) holds from the next request in every process (forget_identities); a flag also ends the running jobs of the
user's workers, which earn nothing for them.
"""

from __future__ import annotations

import unicodedata
from typing import TYPE_CHECKING, Any

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from horde import errors
from horde.accounts import names
from horde.accounts import service as accounts
from horde.accounts.auth import forget_identities
from horde.accounts.identity import Identity
from horde.accounts.models import User
from horde.accounts.moves import Kind
from horde.authz.check import authorize
from horde.authz.roles import Role
from horde.authz.rules import Action
from horde.http.payload import load
from horde.moderation.schemas import MODIFY_USER_SCHEMA
from horde.oversight import trail
from horde.oversight.trail import Actor, Done, Target
from horde.registry import manage
from horde.storage.database import is_postgresql
from horde.timeutil import utcnow
from horde.workers.models import Worker

if TYPE_CHECKING:
    from horde.runtime import Runtime

#: A username, once trimmed: as the registration's rule.
MAX_USERNAME_CHARS = 50
#: Who may set each field, in the AI Horde's order of checks.
FIELD_ACTIONS = {
    "kudos": Action.MODIFY_USER_AS_ADMIN,
    "usage_multiplier": Action.MODIFY_USER_AS_ADMIN,
    "moderator": Action.MODIFY_USER_AS_ADMIN,
    "concurrency": Action.MODIFY_USER,
    "worker_invited": Action.MODIFY_USER,
    "trusted": Action.MODIFY_USER,
    "flagged": Action.MODIFY_USER,
    "admin_comment": Action.MODIFY_USER,
    "public_workers": Action.SET_USER_PROFILE,
    "username": Action.SET_USER_PROFILE,
    "contact": Action.SET_USER_PROFILE,
}
#: The AI Horde's fields of things this Horde has no notion of: refused rather than answered as if done.
UNSUPPORTED = (
    "monthly_kudos",
    "customizer",
    "vpn",
    "service",
    "education",
    "special",
    "filtered",
    "reset_suspicion",
    "generate_proxy_passkey",
    "undelete",
)
#: Changes the caller's identity carries (horde/accounts/identity.py): every process forgets its cached ones.
_IDENTITY_FIELDS = {"moderator", "trusted", "flagged", "concurrency", "usage_multiplier", "username"}
#: The users' columns set as they are given.
_COLUMNS = ("usage_multiplier", "concurrency", "worker_invited", "trusted", "flagged", "admin_comment")
_PROFILE_COLUMNS = ("public_workers", "username", "contact")


def public_id_of(user_id: str) -> int:
    """The users table's public id in a path (`1` of `db0#1`), or 404 as the AI Horde answers."""
    public = names.id_in_alias(user_id) if user_id.isascii() and user_id.isdecimal() else None
    if public is None:
        raise errors.UserNotFound(
            "Please use only the numerical part of the userID. E.g. the '1' in 'db0#1'.", param="user_id"
        )
    return public


def live_user(session: Session, user_id: str) -> User:
    """The user of a path's id: a deleted user is not found."""
    user = names.by_public_id(session, public_id_of(user_id))
    if user is None:
        raise errors.UserNotFound(f"User with ID '{user_id}' not found.", param="user_id")
    return user


def modify(runtime: Runtime, caller: Identity, user_id: str, body: object) -> dict:
    """ModifyUser: the fields set, with their new values (`new_kudos` for kudos)."""
    wanted = load(MODIFY_USER_SCHEMA, body)
    reason = wanted.pop("reason", None)
    wanted = {key: value for key, value in wanted.items() if value is not None}
    with runtime.db.read() as session:
        target = live_user(session, user_id)
        target_id, target_role, anonymous = target.id, target.role, bool(target.anonymous)
    for field in wanted:
        if field in UNSUPPORTED:
            raise errors.BadRequest(f"This Horde has no '{field}' for users; nothing was changed.", param=field)
        authorize(caller, FIELD_ACTIONS[field], owner_id=target_id)
    if not wanted:
        raise errors.NoUserModSelected("No usermod operations selected!")
    if anonymous:
        raise errors.Forbidden("The anonymous user is shared by everyone: it cannot be changed.", param="user_id")
    changes = validated(wanted, target_role)
    return apply_changes(runtime, Actor.of(caller), target_id, changes, reason)


def validated(wanted: dict[str, Any], target_role: str) -> dict[str, Any]:
    """The changes as they will be written: whole kudos, a trimmed username of printable characters."""
    changes = dict(wanted)
    if "kudos" in changes:
        amount = changes["kudos"]
        if amount != int(amount):
            raise errors.BadRequest("Kudos are whole here: send a whole number.", param="kudos")
        changes["kudos"] = int(amount)
    if "username" in changes:
        changes["username"] = checked_username(changes["username"])
    if "moderator" in changes and target_role == Role.ADMIN:
        raise errors.Forbidden(
            "An admin's role changes only at the operator's command line (python -m horde users role).",
            param="moderator",
        )
    return changes


def checked_username(name: str) -> str:
    name = name.strip()
    if any(unicodedata.category(character) in ("Cc", "Cf") for character in name) or "#" in name:
        raise errors.BadRequest("A username holds no control characters and no '#'.", param="username")
    if len(name) > MAX_USERNAME_CHARS:
        raise errors.TooLongUserName(f"The username is too long: at most {MAX_USERNAME_CHARS} characters.")
    if not name:
        raise errors.BadRequest("A username cannot be empty.", param="username")
    return name


def apply_changes(
    runtime: Runtime, actor: Actor, user_id: int, changes: dict[str, Any], reason: str | None = None
) -> dict[str, Any]:
    """Write `changes` (validated, authorized) to user `user_id` and the audit trail in one transaction; the
    answer. Used by the API and by the operator's command line alike."""
    with runtime.db.transaction() as session:  # names are not unique: `name#id` tells users apart
        answer = _write(session, actor, user_id, changes, reason)
    if _IDENTITY_FIELDS & set(changes):
        forget_identities(runtime)
    if changes.get("flagged"):
        manage.end_expired_jobs(runtime)
    return answer


def _write(session: Session, actor: Actor, user_id: int, changes: dict[str, Any], reason: str | None) -> dict:
    """The changes in the caller's transaction: the flagged user's jobs first, then its row under its lock (the
    order a delete takes too, so the two never wait on each other crosswise)."""
    if changes.get("flagged"):
        manage.end_running_jobs(session, _live_workers(session, user_id), utcnow())
    query = select(User).where(User.id == user_id, User.deleted_at.is_(None))
    user = session.scalars(query.with_for_update() if is_postgresql(session) else query).first()
    if user is None:
        raise errors.UserNotFound(f"User with ID '{user_id}' not found.", param="user_id")
    before, after, values, answer = {}, {}, {}, {}
    for field in ("public_workers", "username", "contact", *_COLUMNS):
        if field in changes:
            before[field], after[field] = getattr(user, field), changes[field]
            values[field] = answer[field] = changes[field]
    if "moderator" in changes:
        role = (Role.MODERATOR if changes["moderator"] else Role.USER).value
        before["role"], after["role"], values["role"] = user.role, role, role
        answer["moderator"] = changes["moderator"]
        if changes["moderator"] and not user.trusted:  # a moderator is trusted, as on the AI Horde
            before.setdefault("trusted", False)
            after["trusted"] = values["trusted"] = True
    if values:
        session.execute(
            update(User).where(User.id == user_id).values(**values), execution_options={"synchronize_session": False}
        )
    if values.get("trusted"):  # trust lifts a moderator's pause of the user's workers, as on the AI Horde
        session.execute(
            update(Worker).where(Worker.owner_id == user_id, Worker.deleted_at.is_(None)).values(paused=False),
            execution_options={"synchronize_session": False},
        )
    if "kudos" in changes:
        before["kudos"] = user.kudos
        try:
            accounts.move_kudos(session, user, changes["kudos"], kind=Kind.ADJUSTMENT, counterpart_id=actor.id)
        except errors.BadRequest as refusal:  # past the 64-bit range: the field is this payload's `kudos`
            raise errors.BadRequest(refusal.message, param="kudos") from None
        after["kudos"] = user.kudos
        answer["new_kudos"] = float(user.kudos)
    trail.record(session, actor, Done.MODIFY_USER, Target.USER, user_id, before=before, after=after, reason=reason)
    return answer


def _live_workers(session: Session, user_id: int) -> list[str]:
    return list(session.scalars(select(Worker.id).where(Worker.owner_id == user_id, Worker.deleted_at.is_(None))))
