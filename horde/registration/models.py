"""Registration's tables: invite codes, the accounts made per client address and day, the OpenID Connect
identities bound to accounts, and the sign-in sessions of the web page."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import Boolean, DateTime, ForeignKey, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from horde.storage.database import Base
from horde.timeutil import utcnow


class Invite(Base):
    """An invite code of HORDE_REGISTRATION=invite (`python -m horde invites create --uses N`): good for `uses`
    accounts, each taken by a compare-and-set in the registration's transaction (horde/registration/invites.py).
    The code is shown once and kept only as its SHA-256, as API keys are."""

    __tablename__ = "invites"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    code_hash: Mapped[str] = mapped_column(String(64), unique=True, index=True)
    uses: Mapped[int] = mapped_column(Integer)
    used: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
    #: None: good until used up.
    expires_at: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)


class RegistrationCount(Base):
    """The accounts one client address made in one UTC day (horde/registration/address_counts.py): the count is
    raised by a compare-and-set below HORDE_REGISTRATIONS_PER_ADDRESS_PER_DAY in the registration's transaction.
    The sweeper drops the days before today."""

    __tablename__ = "registration_counts"

    #: As horde/http/client_address.py reads it (HORDE_TRUSTED_PROXY_HOPS), at most 64 characters.
    client_address: Mapped[str] = mapped_column(String(64), primary_key=True)
    #: Days since the Unix epoch, UTC.
    epoch_day: Mapped[int] = mapped_column(Integer, primary_key=True)
    registered: Mapped[int] = mapped_column(Integer)


class OidcIdentity(Base):
    """An account bound to an OpenID Connect provider's user: (issuer, subject) names it for good, whatever the
    provider's other claims become (OpenID Connect Core 1.0, §5.7)."""

    __tablename__ = "oidc_identities"

    issuer: Mapped[str] = mapped_column(String(255), primary_key=True)
    #: At most 255 ASCII characters (OpenID Connect Core 1.0, §2).
    subject: Mapped[str] = mapped_column(String(255), primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"), index=True)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)


class SignInSession(Base):
    """A browser signed in through the OpenID Connect provider (horde/registration/signin.py): its cookie carries
    the session's token, signed with the server's secret; the table keeps the token's SHA-256, so a session can be
    ended (signing out) and lives no longer than `expires_at`."""

    __tablename__ = "sign_in_sessions"

    token_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"), index=True)
    #: The value the page sends back in X-CSRF-Token with each change it asks through the session.
    csrf_token: Mapped[str] = mapped_column(String(64))
    #: The sign-in made the account: the page asks for its first key (POST /api/v2/oidc/api_key) at once.
    new_account: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
    expires_at: Mapped[dt.datetime] = mapped_column(DateTime, index=True)
