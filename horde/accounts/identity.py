"""Who an API key is, cached per process for a few seconds.

Every call authenticates, and most come from the same few keys (a worker pops,
progresses and submits with its owner's key). The cache holds only what does not
move with the money (id, name, trust, role, anonymity, what moderators set), never the balance, keyed by
the key's hash. An entry lives IDENTITY_CACHE_S. A change that must take effect at
once (a key replaced, a user deleted, a role changed) empties the cache of every
process: horde/accounts/auth.py forget_identities, through the event bus.
"""

from __future__ import annotations

import datetime as dt
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from horde.accounts.models import DEFAULT_CONCURRENCY

if TYPE_CHECKING:
    from horde.accounts.models import User

IDENTITY_CACHE_S = 10.0
IDENTITY_CACHE_MAX_ENTRIES = 100_000


@dataclass(frozen=True)
class Identity:
    """The caller, as the routes need it; read the balance from the database."""

    id: int
    username: str
    trusted: bool
    anonymous: bool
    #: A horde.authz.roles.Role; a shared key never acts with it (horde/authz/roles.py effective_role).
    role: str = "user"
    #: The caller sent one of this user's shared keys (horde/accounts/shared_keys.py): its requests are the user's,
    #: within the key's limits, which admission reads afresh (a key's limits and life are never cached here).
    shared_key_id: str | None = None
    # What moderators set (horde/moderation/users.py), read on every request without a read of the user's row: a
    # change empties every process's cache (forget_identities).
    flagged: bool = False
    #: The most requests of one kind the user may have waiting or running (admission's in-flight check).
    concurrency: int = DEFAULT_CONCURRENCY
    #: What its requests cost is their price times this.
    usage_multiplier: float = 1.0
    created_at: dt.datetime | None = None

    @classmethod
    def of(cls, user: User, shared_key_id: str | None = None) -> Identity:
        return cls(
            id=user.id,
            username=user.username,
            trusted=bool(user.trusted),
            anonymous=bool(user.anonymous),
            role=user.role or "user",
            shared_key_id=shared_key_id,
            flagged=bool(user.flagged),
            concurrency=DEFAULT_CONCURRENCY if user.concurrency is None else int(user.concurrency),
            usage_multiplier=1.0 if user.usage_multiplier is None else float(user.usage_multiplier),
            created_at=user.created_at,
        )


class IdentityCache:
    def __init__(
        self,
        ttl_s: float = IDENTITY_CACHE_S,
        max_entries: int = IDENTITY_CACHE_MAX_ENTRIES,
        polling_s: Callable[[], float | None] = lambda: None,
    ):
        """`polling_s`: how often this process reads the database for what other processes changed, while it
        cannot hear them (None while it hears them, or is alone): an entry then lives no longer than that, since a
        key replaced in another process would not reach this cache otherwise."""
        self.ttl_s = ttl_s
        self.max_entries = max_entries
        self._polling_s = polling_s
        self._entries: dict[str, tuple[float, Identity]] = {}
        self._lock = threading.Lock()

    def get(self, key_hash: str) -> Identity | None:
        entry = self._entries.get(key_hash)
        if entry is None or time.monotonic() >= entry[0]:
            return None
        return entry[1]

    def put(self, key_hash: str, identity: Identity) -> None:
        with self._lock:
            if len(self._entries) >= self.max_entries:  # bounded: forget everything rather than grow
                self._entries.clear()
            polling_s = self._polling_s()
            ttl_s = self.ttl_s if polling_s is None else min(self.ttl_s, polling_s)
            self._entries[key_hash] = (time.monotonic() + ttl_s, identity)

    def forget_all(self) -> None:
        """Drop every entry: the next call of each key reads its user afresh."""
        with self._lock:
            self._entries.clear()
