"""A user's new API key in place of the old one (POST /api/v2/users/{id}/api_key, the sign-in session's key).

The new key is shown once and kept as its hash, like every key. The old key stops working from the next request
on, in every process: the caller commits, then empties the identity caches (auth.py forget_identities).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from sqlalchemy import CursorResult, update
from sqlalchemy.orm import Session

from horde import errors
from horde.accounts.auth import forget_identities
from horde.accounts.keys import hash_api_key, new_api_key
from horde.accounts.models import User
from horde.authz.check import authorize
from horde.authz.rules import Action

if TYPE_CHECKING:
    from horde.accounts.parts import AccountsParts
    from horde.authz.roles import Caller


def replace_api_key(session: Session, user_id: int) -> str:
    """Give user `user_id` a new key in the caller's transaction and return it; 404 UserNotFound when there is no
    such user (the anonymous user has no key of its own to replace)."""
    key = new_api_key()
    replaced = cast(
        CursorResult,
        session.execute(
            update(User).where(User.id == user_id, User.anonymous.is_(False)).values(api_key_hash=hash_api_key(key)),
            execution_options={"synchronize_session": False},
        ),
    )
    if replaced.rowcount != 1:
        raise errors.UserNotFound(f"No user with id {user_id}.")
    return key


def rotate(runtime: AccountsParts, caller: Caller, user_id: int) -> str:
    """User `user_id`'s new key, asked by `caller`: only the user themself, with their own key (the authorization
    table's refusals otherwise). Committed, then every process forgets the old key before this returns."""
    authorize(caller, Action.ROTATE_API_KEY, owner_id=user_id)
    with runtime.db.transaction() as session:
        key = replace_api_key(session, user_id)
    forget_identities(runtime)
    return key
