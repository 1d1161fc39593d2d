"""Whether registration is open now, and how: the one question every way in asks (the API, the AI Horde's form, a
first sign-in through the OpenID Connect provider)."""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from horde.accounts.parts import AccountsParts


class Mode(StrEnum):
    OPEN = "open"  # anyone may register
    INVITE = "invite"  # with an invite code (`python -m horde invites create`); a provider's user needs none
    CLOSED = "closed"  # no new account; accounts bound to the provider still sign in


def registration_mode(runtime: AccountsParts) -> Mode:
    """The registration mode in force: HORDE_REGISTRATION. Anything else that closes registration for a while (the
    moderators' raid mode) is asked here, so every way in obeys it alike."""
    return Mode(runtime.settings.registration)
