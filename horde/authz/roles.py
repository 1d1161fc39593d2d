"""The roles a user holds and the kinds of key a call can come with: the two axes of the authorization table."""

from __future__ import annotations

from enum import StrEnum
from typing import Protocol


class Role(StrEnum):
    """A user's standing: set by the operator (`python -m horde users role`) or by an admin through the API."""

    USER = "user"
    MODERATOR = "moderator"
    ADMIN = "admin"


#: What each role may do includes what every role below it may: an admin is also a moderator.
ROLE_RANK = {Role.USER: 0, Role.MODERATOR: 1, Role.ADMIN: 2}


class KeyKind(StrEnum):
    """How the caller proved who it is."""

    ANONYMOUS = "anonymous"  # no key, or the anonymous key 0000000000
    OWN = "own"  # the user's own API key
    SHARED = "shared"  # one of the user's shared keys: it pays for requests, it holds no role


class Caller(Protocol):
    """What the check reads of the caller (horde/accounts/identity.py Identity, or a user's row); an Identity
    also names the shared key it came with (`shared_key_id`), which a user's row never does."""

    @property
    def id(self) -> int: ...

    @property
    def role(self) -> str: ...

    @property
    def anonymous(self) -> bool: ...


def key_kind(caller: Caller) -> KeyKind:
    if caller.anonymous:
        return KeyKind.ANONYMOUS
    # A user's row (horde/accounts/models.py User) is a caller too, with its own key: it names no shared key.
    return KeyKind.SHARED if getattr(caller, "shared_key_id", None) is not None else KeyKind.OWN


def effective_role(caller: Caller) -> Role:
    """The role the call acts with: a shared key lends kudos, never its owner's role."""
    if key_kind(caller) is not KeyKind.OWN:
        return Role.USER
    try:
        return Role(caller.role)
    except ValueError:  # a value written by hand in the database: the least privilege
        return Role.USER


def at_least(role: Role, wanted: Role) -> bool:
    return ROLE_RANK[role] >= ROLE_RANK[wanted]
