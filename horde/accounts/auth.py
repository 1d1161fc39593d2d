"""Who is calling: the user owning an API key, for every route of both APIs.

A known key is read without a write transaction; only the first anonymous call on a fresh database (which
creates the anonymous user) or a bad key (refused with 401) opens one. A shared key's id is a key too
(horde/accounts/shared_keys.py): its caller is the key's owner, with the key named in the identity.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from horde.accounts import service as accounts
from horde.accounts import shared_keys
from horde.accounts.identity import Identity
from horde.observability.record import note

if TYPE_CHECKING:
    from horde.accounts.parts import AccountsParts


#: The bus channel on which a process tells every other to forget the identities it cached.
IDENTITIES_CHANNEL = "identities"


def forget_identities(runtime: AccountsParts) -> None:
    """After a change that must hold from the next request on, in every process (a key replaced, a user deleted,
    a role changed, committed before this call): this process's cache is emptied at once, and the others' before
    the caller's answer leaves, with Redis (each process acknowledges that it forgot: redis_bus.publish_now).
    Without Redis, processes sharing a database forget within the poll interval (HORDE_EVENTS_POLL_S), the life of
    their entries while they share it (identity.py IdentityCache)."""
    runtime.identities.forget_all()
    runtime.bus.publish_now(IDENTITIES_CHANNEL)


def authenticate(runtime: AccountsParts, api_key: str | None) -> Identity:
    """The caller, from this process's identity cache when it saw the key in the last seconds."""
    cache_key = accounts.identity_cache_key(api_key)
    identity = runtime.identities.get(cache_key)
    if identity is not None:
        note(user=identity.id)
        return identity
    shared_key_id = None
    with runtime.db.read() as session:
        user = accounts.find_user(session, api_key)
        if user is None:
            user = shared_keys.owner_of(session, api_key)
            shared_key_id = shared_keys.canonical_id(api_key) if user is not None else None
    if user is None:
        with runtime.db.transaction() as session:  # first anonymous call on a fresh database, or a bad key
            user = accounts.authenticate(session, api_key)
    identity = Identity.of(user, shared_key_id)
    runtime.identities.put(cache_key, identity)
    note(user=identity.id)
    return identity
