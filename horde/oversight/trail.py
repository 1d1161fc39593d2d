"""The audit trail: every moderator's and admin's action, through the API or the operator's command line, as one
append-only record (who, what, the target, the change before and after, a reason when given, when), written in
the transaction of the change itself, so that a change and its record commit or roll back together. Nothing here
changes or deletes a record (docs/decisions/0038-audit-trail.md)."""

from __future__ import annotations

import getpass
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from sqlalchemy import insert, select
from sqlalchemy.orm import Session

from horde.accounts.identity import Identity
from horde.accounts.names import alias
from horde.oversight.models import MAX_ACTOR_CHARS, MAX_TARGET_CHARS, AuditEntry
from horde.storage.database import table_of
from horde.timeutil import utcnow

#: The most records a page of the trail holds.
MAX_PAGE = 200
DEFAULT_PAGE = 50
_ENTRIES = table_of(AuditEntry)


class Done(StrEnum):
    """What an entry records."""

    MODIFY_USER = "modify_user"  # PUT /users/{id}
    DELETE_USER = "delete_user"  # DELETE /users/{id}
    SET_ROLE = "set_role"  # python -m horde users role
    SET_KUDOS = "set_kudos"  # python -m horde users kudos
    AWARD_KUDOS = "award_kudos"  # POST /kudos/award, python -m horde users kudos-award
    TIME_OUT_ADDRESS = "time_out_address"  # POST /operations/ipaddr, PUT /operations/block_worker_ipaddr/{id}
    FREE_ADDRESS = "free_address"  # DELETE of either
    SET_MODES = "set_modes"  # PUT /status/modes, python -m horde modes
    MODIFY_WORKER = "modify_worker"  # PUT /workers/{id} by a moderator (not the owner)
    DELETE_WORKER = "delete_worker"  # DELETE /workers/{id} by a moderator (not the owner)


class Target(StrEnum):
    USER = "user"
    WORKER = "worker"
    ADDRESS = "address"
    MODES = "modes"


@dataclass(frozen=True)
class Actor:
    """Who acted: a user through the API, or the operator at the command line (no user)."""

    id: int | None
    name: str

    @classmethod
    def of(cls, caller: Identity) -> Actor:
        return cls(caller.id, alias(caller.username, caller.id, anonymous=caller.anonymous))

    @classmethod
    def operator(cls) -> Actor:
        try:
            login = getpass.getuser()
        except (KeyError, OSError):  # no login name for this process's user
            login = "unknown"
        return cls(None, f"operator {login}"[:MAX_ACTOR_CHARS])


def record(
    session: Session,
    actor: Actor,
    done: Done,
    target_kind: Target,
    target: object,
    *,
    before: dict[str, Any] | None = None,
    after: dict[str, Any] | None = None,
    reason: str | None = None,
) -> None:
    """Append the action to the trail, in the caller's transaction."""
    session.execute(
        insert(_ENTRIES).values(
            at=utcnow(),
            actor_id=actor.id,
            actor=actor.name[:MAX_ACTOR_CHARS],
            action=done.value,
            target_kind=target_kind.value,
            target=str(target)[:MAX_TARGET_CHARS],
            before=before,
            after=after,
            reason=reason or None,
        )
    )


def page(
    session: Session,
    *,
    before_id: int | None = None,
    limit: int = DEFAULT_PAGE,
    target_kind: str | None = None,
    target: str | None = None,
    actor_id: int | None = None,
    action: str | None = None,
) -> list[dict[str, Any]]:
    """The latest records first, older than `before_id` when given, at most `limit` (bounded by MAX_PAGE); with a
    target (its kind, and which one), an actor or an action, only theirs. Each filter but the action has its
    index, so a page costs its own rows."""
    query = select(_ENTRIES).order_by(_ENTRIES.c.id.desc()).limit(max(1, min(limit, MAX_PAGE)))
    if before_id is not None:
        query = query.where(_ENTRIES.c.id < before_id)
    if target_kind is not None:
        query = query.where(_ENTRIES.c.target_kind == target_kind)
    if target is not None:
        query = query.where(_ENTRIES.c.target == target)
    if actor_id is not None:
        query = query.where(_ENTRIES.c.actor_id == actor_id)
    if action is not None:
        query = query.where(_ENTRIES.c.action == action)
    return [
        {
            "id": row.id,
            "at": row.at.isoformat(timespec="seconds") + "Z",
            "actor": row.actor,
            "actor_id": row.actor_id,
            "action": row.action,
            "target_kind": row.target_kind,
            "target": row.target,
            "before": row.before,
            "after": row.after,
            "reason": row.reason,
        }
        for row in session.execute(query)
    ]
