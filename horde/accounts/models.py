"""Account tables: users, the kudos ledger that explains every balance, the callers' rate counts, shared keys."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import BigInteger, Boolean, DateTime, Float, ForeignKey, Index, Integer, String, text
from sqlalchemy.orm import Mapped, mapped_column

from horde.storage.database import Base
from horde.timeutil import utcnow

#: The AI Horde's default of a user's requests waiting or running at once.
DEFAULT_CONCURRENCY = 30
MAX_CONTACT_CHARS = 500
MAX_ADMIN_COMMENT_CHARS = 500


class User(Base):
    __tablename__ = "users"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    #: Names repeat, as on the AI Horde: `name#id` tells users apart (names.py). Indexed for find_by_name.
    username: Mapped[str] = mapped_column(String(100), index=True)
    api_key_hash: Mapped[str] = mapped_column(String(64), unique=True, index=True)
    #: Whole kudos; always the sum of this user's ledger entries. 64-bit, as every stored amount of kudos.
    kudos: Mapped[int] = mapped_column(BigInteger, default=0)
    trusted: Mapped[bool] = mapped_column(Boolean, default=False)
    anonymous: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
    #: A horde.authz.roles.Role: what the user may do beyond their own things (the authorization table).
    role: Mapped[str] = mapped_column(String(16), default="user", server_default=text("'user'"))

    # Running totals for the AI Horde's user details (kudos_details, records), added to by the same statement that
    # moves the balance and writes the ledger entry (horde/accounts/moves.py): a read costs one row, however long
    # the user's history. Each kudos_* column is the sum of this user's ledger entries of its kinds. A database
    # default too: rows written before these columns existed (sql/0011_*) and by other tools start at zero.
    kudos_accumulated: Mapped[int] = mapped_column(BigInteger, default=0, server_default=text("0"))  # charge and reward
    kudos_gifted: Mapped[int] = mapped_column(
        BigInteger, default=0, server_default=text("0")
    )  # gifted (sent to other users, negative)
    kudos_received: Mapped[int] = mapped_column(
        BigInteger, default=0, server_default=text("0")
    )  # received (from other users)
    kudos_admin: Mapped[int] = mapped_column(
        BigInteger, default=0, server_default=text("0")
    )  # grant and adjustment (the operator's)
    kudos_awarded: Mapped[int] = mapped_column(
        BigInteger, default=0, server_default=text("0")
    )  # awarded by a moderator (POST /kudos/award)
    #: Generations served to this user's requests (a chat request, or one of a text request's n) and their tokens.
    requested_generations: Mapped[int] = mapped_column(Integer, default=0, server_default=text("0"))
    requested_tokens: Mapped[int] = mapped_column(BigInteger, default=0, server_default=text("0"))
    #: Generations this user's workers served, and their tokens.
    fulfilled_generations: Mapped[int] = mapped_column(Integer, default=0, server_default=text("0"))
    fulfilled_tokens: Mapped[int] = mapped_column(BigInteger, default=0, server_default=text("0"))

    # What moderators set (PUT /api/v2/users/{id}, docs/reference/moderation.md); a database default too, for rows
    # written before these columns existed (sql/0016_*).
    #: A flagged user's workers take no job and earn nothing; it sends and receives no kudos.
    flagged: Mapped[bool] = mapped_column(Boolean, default=False, server_default=text("false"))
    #: The most of its requests a user may have waiting or running at once, of each kind (chat; text generations).
    concurrency: Mapped[int] = mapped_column(
        Integer, default=DEFAULT_CONCURRENCY, server_default=text(str(DEFAULT_CONCURRENCY))
    )
    #: What the user's requests cost is their price times this (their workers' rewards stay the price).
    usage_multiplier: Mapped[float] = mapped_column(Float, default=1.0, server_default=text("1.0"))
    #: How many workers the user may have in worker invite-only mode.
    worker_invited: Mapped[int] = mapped_column(Integer, default=0, server_default=text("0"))
    #: Whether the public sees the user's worker ids.
    public_workers: Mapped[bool] = mapped_column(Boolean, default=False, server_default=text("false"))
    #: How moderators may reach the user (the user and moderators see it), and their note on the user (moderators).
    contact: Mapped[str | None] = mapped_column(String(MAX_CONTACT_CHARS), nullable=True)
    admin_comment: Mapped[str | None] = mapped_column(String(MAX_ADMIN_COMMENT_CHARS), nullable=True)
    #: When the user was deleted (DELETE /users/{id}): the row stays for its ledger entries and requests, without a
    #: working key, workers or shared keys.
    deleted_at: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)


class KudosEntry(Base):
    """One movement of kudos; a balance is the sum of its user's entries."""

    __tablename__ = "kudos_ledger"
    #: A user's entries by time: the console's pages of the ledger (newest first, keyset) and its sums per day over
    #: a window read only the entries they show (horde/console/ledger.py, decision 0040).
    __table_args__ = (Index("ix_kudos_ledger_user_created", "user_id", "created_at", "id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"))
    amount: Mapped[int] = mapped_column(BigInteger)
    kind: Mapped[str] = mapped_column(String(16))  # a horde.accounts.moves.Kind
    request_id: Mapped[str | None] = mapped_column(String(36), nullable=True, index=True)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
    #: The other user of a gift (gifted, received), or of an award or adjustment made by a moderator.
    counterpart_id: Mapped[int | None] = mapped_column(Integer, nullable=True)


class RateCount(Base):
    """A caller's admissions in one second (horde/accounts/rate_limit.py): the rate budget sums a caller's
    seconds of the window, at most RATE_WINDOW_S + 1 rows, however many requests they hold.

    No foreign key: a caller's row is written by every admission, and the sweeper drops seconds past the window."""

    __tablename__ = "rate_counts"

    user_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    #: The anonymous user's caller is its client address; every other user's budget is its own, "".
    client_address: Mapped[str] = mapped_column(String(64), primary_key=True)
    #: Seconds since the Unix epoch (UTC) of the admissions counted here.
    epoch_second: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    admitted: Mapped[int] = mapped_column(Integer)


class SharedKey(Base):
    """A key that lends its owner's kudos (the AI Horde's shared keys): a request sent with it is the owner's,
    within the key's limits (horde/accounts/shared_keys.py).

    The id is the key itself, kept as it is (as the AI Horde keeps it): its owner reads it back in
    `sharedkey_ids`. Requests name the key they were paid with (`shared_key_id`) without a foreign key, so a key
    deleted while its requests run leaves them to finish, charged to the owner alone."""

    __tablename__ = "shared_keys"

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"), index=True)
    name: Mapped[str | None] = mapped_column(String(255), nullable=True)
    #: The most kudos requests paid with the key may cost in all; -1: no limit (the AI Horde's `kudos`). Not named
    #: `kudos`: SQLAlchemy adds a SET of every column named like a bound parameter to an UPDATE, and the settling
    #: statements that update this table bind a `kudos` of their own.
    kudos_limit: Mapped[int] = mapped_column(BigInteger)
    #: Kudos charged so far to requests paid with the key.
    utilized: Mapped[int] = mapped_column(BigInteger, default=0)
    expires_at: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)
    max_image_pixels: Mapped[int] = mapped_column(Integer, default=-1)
    max_image_steps: Mapped[int] = mapped_column(Integer, default=-1)
    #: The most tokens a request paid with the key may ask for (a text request's max_length, a chat request's
    #: max_tokens); -1: no limit.
    max_text_tokens: Mapped[int] = mapped_column(Integer, default=-1)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
