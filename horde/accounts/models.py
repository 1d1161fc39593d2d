"""Account tables: users, the kudos ledger that explains every balance, and the callers' rate counts."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import BigInteger, Boolean, DateTime, ForeignKey, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from horde.database import Base
from horde.timeutil import utcnow


class User(Base):
    __tablename__ = "users"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    username: Mapped[str] = mapped_column(String(100), unique=True)
    api_key_hash: Mapped[str] = mapped_column(String(64), unique=True, index=True)
    #: Whole kudos; always the sum of this user's ledger entries.
    kudos: Mapped[int] = mapped_column(Integer, default=0)
    trusted: Mapped[bool] = mapped_column(Boolean, default=False)
    anonymous: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)

    def to_public(self) -> dict:
        return {"id": self.id, "username": self.username, "kudos": self.kudos, "trusted": self.trusted}


class KudosEntry(Base):
    """One movement of kudos; a balance is the sum of its user's entries."""

    __tablename__ = "kudos_ledger"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"), index=True)
    amount: Mapped[int] = mapped_column(Integer)
    kind: Mapped[str] = mapped_column(String(16))  # grant | adjustment | charge | reward
    request_id: Mapped[str | None] = mapped_column(String(36), nullable=True, index=True)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)


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
