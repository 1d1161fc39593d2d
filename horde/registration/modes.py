"""Whether registration is open now, and how: the one question every way in asks (the API, the AI Horde's form, a
first sign-in through the OpenID Connect provider)."""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING, Protocol

from horde.accounts.parts import AccountsParts
from horde.oversight.gate import accepts_registrations

if TYPE_CHECKING:
    from horde.oversight.view import OversightView


class RegistrationParts(AccountsParts, Protocol):
    """What registration reads of the Runtime (horde/runtime.py): the accounts' parts and the moderators' view."""

    oversight: OversightView


class Mode(StrEnum):
    OPEN = "open"  # anyone may register
    INVITE = "invite"  # with an invite code (`python -m horde invites create`); a provider's user needs none
    CLOSED = "closed"  # no new account; accounts bound to the provider still sign in


def registration_mode(runtime: RegistrationParts) -> Mode:
    """The registration mode in force: HORDE_REGISTRATION, closed while an admin holds the Horde in raid mode (PUT
    /api/v2/status/modes): asked here, so that every way in obeys it alike."""
    if not accepts_registrations(runtime.oversight.current()):
        return Mode.CLOSED
    return Mode(runtime.settings.registration)
