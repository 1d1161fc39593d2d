"""Who is calling: the user owning an API key, for every route of both APIs.

A known key is read without a write transaction; only the first anonymous call on a fresh database (which
creates the anonymous user) or a bad key (refused with 401) opens one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from horde.accounts import service as accounts
from horde.accounts.identity import Identity
from horde.ops.request_context import note

if TYPE_CHECKING:
    from horde.runtime import Runtime


def authenticate(runtime: Runtime, api_key: str | None) -> Identity:
    """The caller, from this process's identity cache when it saw the key in the last seconds."""
    cache_key = accounts.identity_cache_key(api_key)
    identity = runtime.identities.get(cache_key)
    if identity is not None:
        note(user=identity.id)
        return identity
    with runtime.db.read() as session:
        user = accounts.find_user(session, api_key)
    if user is None:
        with runtime.db.transaction() as session:  # first anonymous call on a fresh database, or a bad key
            user = accounts.authenticate(session, api_key)
    identity = Identity.of(user)
    runtime.identities.put(cache_key, identity)
    note(user=identity.id)
    return identity
