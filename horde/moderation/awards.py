"""POST /api/v2/kudos/award (moderators) and `python -m horde users kudos-award`: kudos given to a user, as one
ledger entry (kind `awarded`, naming the moderator) added in SQL with its audit record in one transaction."""

from __future__ import annotations

from typing import TYPE_CHECKING

from horde import errors
from horde.accounts import names
from horde.accounts import service as accounts
from horde.accounts.models import User
from horde.accounts.moves import Kind
from horde.oversight import trail
from horde.oversight.trail import Actor, Done, Target
from horde.storage.database import is_postgresql

if TYPE_CHECKING:
    from horde.runtime import Runtime


def award(runtime: Runtime, actor: Actor, username: str, amount: int, reason: str | None = None) -> int:
    """Award `amount` kudos to `username` (`name#id`); the amount awarded. InvalidAwardUsername for no such user,
    KudosAwardToAnon for the anonymous user, TargetAccountFlagged for a flagged one."""
    public = names.id_in_alias(username)
    with runtime.db.transaction() as session:
        found = names.by_public_id(session, public) if public is not None else None
        if found is None:
            raise errors.InvalidAwardUsername("Invalid target username.", param="username")
        if found.anonymous:
            raise errors.KudosAwardToAnon("Cannot award the anonymous user.", param="username")
        user = session.get_one(
            User, found.id, with_for_update=True if is_postgresql(session) else None, populate_existing=True
        )
        if user.flagged:
            raise errors.TargetAccountFlagged("The target account has been flagged: it cannot be awarded kudos.")
        before = user.kudos
        accounts.move_kudos(session, user, amount, kind=Kind.AWARD, counterpart_id=actor.id)
        trail.record(
            session,
            actor,
            Done.AWARD_KUDOS,
            Target.USER,
            user.id,
            before={"kudos": before},
            after={"kudos": user.kudos, "awarded": amount},
            reason=reason,
        )
    return amount
