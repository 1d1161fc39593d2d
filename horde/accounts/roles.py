"""A user's role (horde/authz/roles.py Role), set by the operator's command line or by an admin through the API.

A role takes effect from the next request on, in every process: the identity caches are emptied (auth.py
forget_identities) once the change is committed.
"""

from __future__ import annotations

from sqlalchemy import update
from sqlalchemy.orm import Session

from horde.accounts import service as accounts
from horde.accounts.models import User
from horde.authz.roles import Role


def set_role(session: Session, name: str, role: str) -> User:
    """Give the user `name` (or `name#id`) the role `role`, in the caller's transaction."""
    user = accounts.find_by_name(session, name)
    session.execute(
        update(User).where(User.id == user.id).values(role=Role(role).value),
        execution_options={"synchronize_session": False},
    )
    return user
