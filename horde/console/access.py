"""Whose account a console route reads: the user of the path's id, once the table lets the caller read it."""

from __future__ import annotations

from sqlalchemy.orm import Session

from horde import errors
from horde.accounts import names
from horde.accounts.models import User
from horde.authz.check import authorize, may
from horde.authz.roles import Caller
from horde.authz.rules import Action


def readable_user(session: Session, caller: Caller, raw_id: str) -> User:
    """The user of `raw_id` (the number of its `name#id`), readable by `caller`: its own key or a moderator's.
    404 UserNotFound for an unknown id (a deleted user is found by moderators only), else the table's refusal."""
    public = names.id_in_alias(raw_id) if raw_id.isascii() and raw_id.isdecimal() else None
    moderator = may(caller, Action.MODERATOR_VIEW)
    user = names.by_public_id(session, public, deleted=moderator) if public is not None else None
    if user is None:
        raise errors.UserNotFound(f"User with ID '{raw_id}' not found.", param="user_id")
    authorize(caller, Action.VIEW_ACCOUNT, owner_id=user.id)
    return user
