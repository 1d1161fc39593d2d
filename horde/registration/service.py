"""Making an account: the mode, the name, the invite, the address's count, the user and its first kudos, all in one
transaction, so a refused registration leaves nothing behind (no user row, no ledger entry, no invite use, no
count)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from horde import errors
from horde.accounts import service as accounts
from horde.accounts.models import User
from horde.accounts.names import alias
from horde.registration import address_counts, invites
from horde.registration.models import OidcIdentity
from horde.registration.modes import Mode, registration_mode
from horde.registration.usernames import checked_username

if TYPE_CHECKING:
    from horde.config import Settings
    from horde.registration.modes import RegistrationParts
    from horde.registration.oidc import Identity


@dataclass(frozen=True)
class Registered:
    """A new account and its API key, which is shown this once (only its hash is kept)."""

    id: int
    username: str
    api_key: str

    def to_json(self) -> dict:
        return {"id": self.id, "username": self.username, "api_key": self.api_key}


def register(runtime: RegistrationParts, username: str, *, invite_code: str | None, address: str) -> Registered:
    """A new account named `username` for the client at `address`, under the registration mode in force:
    403 RegistrationClosed, 400 BadRequest (param `username`), 403 InvalidInviteCode or 429 TooManyRegistrations
    otherwise."""
    mode = registration_mode(runtime)
    if mode is Mode.CLOSED:
        raise closed()
    name = checked_username(username)
    with runtime.db.transaction() as session:
        if mode is Mode.INVITE:
            invites.take_use(session, invite_code)
        user, key = open_account(session, runtime.settings, name, address)
        return Registered(user.id, alias(user.username, user.id, anonymous=False), key)


def open_account(session: Session, settings: Settings, name: str, address: str) -> tuple[User, str]:
    """The account itself, in the caller's transaction: the address's count taken, the user made with
    HORDE_NEW_USER_KUDOS granted on the ledger. `name` has passed checked_username."""
    address_counts.count_one(session, address, settings.registrations_per_address_per_day)
    return accounts.create_user(session, name, kudos=settings.new_user_kudos, unique_name=False)


def closed() -> errors.HordeError:
    return errors.RegistrationClosed("This Horde is not taking new accounts.")


def account_of(runtime: RegistrationParts, identity: Identity, *, address: str) -> tuple[int, bool]:
    """The account bound to the provider's user (its id, and whether this sign-in made it). A first sign-in makes
    the account, named from the provider's claims, unless registration is closed; it needs no invite (the operator
    chose the provider) but counts against the address's registrations like any other. Two first sign-ins of one
    person at once make one account: the second finds the first's binding."""
    bound = _bound_user(runtime, identity)
    if bound is not None:
        return bound, False
    if registration_mode(runtime) is Mode.CLOSED:
        raise closed()
    try:
        with runtime.db.transaction() as session:
            user, _key = open_account(session, runtime.settings, identity.username, address)
            session.add(OidcIdentity(issuer=identity.issuer, subject=identity.subject, user_id=user.id))
            session.flush()
            return user.id, True
    except IntegrityError:  # the same user's other sign-in bound an account first: this one rolled back
        bound = _bound_user(runtime, identity)
        if bound is None:
            raise
        return bound, False


def _bound_user(runtime: RegistrationParts, identity: Identity) -> int | None:
    with runtime.db.read() as session:
        return session.scalar(
            select(OidcIdentity.user_id).where(
                OidcIdentity.issuer == identity.issuer, OidcIdentity.subject == identity.subject
            )
        )
