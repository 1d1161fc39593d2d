"""Users as the AI Horde names them: `name#id`, with the anonymous user as `Anonymous#0`.

The AI Horde's anonymous user has id 0, and its clients special-case `Anonymous#0` (KoboldAI Lite, horde-sdk).
Here the anonymous user is a row like any other, with an id of its own: its public id is 0, and its own id is
never shown nor looked up. Ids start at 1 on both databases, so 0 names no other user.
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from horde.accounts.models import User

ANONYMOUS_PUBLIC_ID = 0
#: The largest id a users row can have (a 32-bit integer column).
LARGEST_USER_ID = 2**31 - 1


def public_id(user_id: int, *, anonymous: bool) -> int:
    return ANONYMOUS_PUBLIC_ID if anonymous else user_id


def alias(username: str, user_id: int, *, anonymous: bool) -> str:
    """The AI Horde's unique username: the name and the public id."""
    return f"{username}#{public_id(user_id, anonymous=anonymous)}"


def id_in_alias(name: str) -> int | None:
    """The public id a `name#id` names (the part after the last '#', or the whole when there is none), as the AI
    Horde reads it: the name part is not compared. None when it is not a whole number."""
    tail = name.rsplit("#", 1)[-1].strip()
    if not (tail.isascii() and tail.isdecimal()) or len(tail) > len(str(LARGEST_USER_ID)):
        return None
    number = int(tail)
    return number if number <= LARGEST_USER_ID else None


def by_public_id(session: Session, public: int, *, deleted: bool = False) -> User | None:
    """The user with that public id: 0 is the anonymous user, whose own id is never looked up. A deleted user
    (horde/moderation/deletion.py) is found only with `deleted`, for the moderators' view."""
    if public == ANONYMOUS_PUBLIC_ID:
        return session.scalar(select(User).where(User.anonymous.is_(True)))
    query = select(User).where(User.id == public, User.anonymous.is_(False))
    return session.scalar(query if deleted else query.where(User.deleted_at.is_(None)))
