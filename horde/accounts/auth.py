"""Who is calling: the user owning an API key, for every route of both APIs.

A known key is read without a write transaction; only the first anonymous call on a fresh database (which
creates the anonymous user) or a bad key (refused with 401) opens one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from horde.accounts import service as accounts
from horde.accounts.models import User

if TYPE_CHECKING:
    from horde.runtime import Runtime


def authenticate(runtime: Runtime, api_key: str | None) -> User:
    with runtime.db.read() as session:
        user = accounts.find_user(session, api_key)
    if user is not None:
        return user
    with runtime.db.transaction() as session:
        return accounts.authenticate(session, api_key)
