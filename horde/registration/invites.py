"""Invite codes: made by the operator (`python -m horde invites create --uses N`), each good for N accounts.

A code is 16 random bytes (22 URL-safe characters), shown once and kept as its SHA-256. A registration takes one
use by a compare-and-set (`used < uses`, not expired) in its own transaction: concurrent registrations never use a
code more than `uses` times, and a registration refused later in its transaction gives the use back by rolling
back.
"""

from __future__ import annotations

import datetime as dt
import secrets
from typing import cast

from sqlalchemy import CursorResult, func, or_, select, update
from sqlalchemy.orm import Session

from horde import errors
from horde.accounts.keys import hash_api_key
from horde.registration.models import Invite
from horde.timeutil import utcnow

INVITE_CODE_BYTES = 16
#: The longest invite code a body may carry (a code made here has 22 characters).
MAX_INVITE_CODE_CHARS = 64
MAX_INVITE_USES = 1_000_000
MAX_INVITE_DAYS = 3650
#: The most invites `python -m horde invites list` shows, newest first.
LISTED_INVITES = 100


def create(session: Session, uses: int, *, days: int | None = None) -> str:
    """A new code good for `uses` accounts (and `days` days when given), in the caller's transaction."""
    if not 1 <= uses <= MAX_INVITE_USES:
        raise errors.BadRequest(f"An invite is good for 1 to {MAX_INVITE_USES:,} accounts.", param="uses")
    if days is not None and not 1 <= days <= MAX_INVITE_DAYS:
        raise errors.BadRequest(f"An invite lasts 1 to {MAX_INVITE_DAYS} days.", param="days")
    code = secrets.token_urlsafe(INVITE_CODE_BYTES)
    expires_at = utcnow() + dt.timedelta(days=days) if days is not None else None
    session.add(Invite(code_hash=hash_api_key(code), uses=uses, used=0, expires_at=expires_at))
    session.flush()
    return code


def take_use(session: Session, code: str | None) -> None:
    """One use of `code`, taken in the caller's transaction; 403 InvalidInviteCode when it is missing, unknown,
    used up or expired (the same refusal for each: a guess learns nothing)."""
    if not code:
        raise errors.InvalidInviteCode("This Horde registers by invitation: send the invite code as 'invite_code'.")
    now = utcnow()
    taken = cast(
        CursorResult,
        session.execute(
            update(Invite)
            .where(
                Invite.code_hash == hash_api_key(code),
                Invite.used < Invite.uses,
                or_(Invite.expires_at.is_(None), Invite.expires_at > now),
            )
            .values(used=Invite.used + 1),
            execution_options={"synchronize_session": False},
        ),
    )
    if taken.rowcount != 1:
        raise errors.InvalidInviteCode("The invite code is unknown, used up or expired.")


def listed(session: Session) -> list[dict]:
    """The newest LISTED_INVITES invites (never their codes), for the operator."""
    rows = session.execute(
        select(Invite.id, Invite.uses, Invite.used, Invite.created_at, Invite.expires_at)
        .order_by(Invite.id.desc())
        .limit(LISTED_INVITES)
    )
    return [row._asdict() for row in rows]


def count(session: Session) -> int:
    return int(session.scalar(select(func.count()).select_from(Invite)) or 0)


def revoke(session: Session, invite_id: int) -> bool:
    """Use the invite up: no account can be made with it any more. False when there is no such invite."""
    ended = cast(
        CursorResult,
        session.execute(
            update(Invite).where(Invite.id == invite_id).values(uses=Invite.used),
            execution_options={"synchronize_session": False},
        ),
    )
    return ended.rowcount == 1
