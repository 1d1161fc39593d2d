"""Stored responses (what `store: true` keeps for GET, DELETE and previous_response_id). The server secret that
seals reasoning is the storage's (horde/storage/secrets.py)."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import JSON, DateTime, ForeignKey, String
from sqlalchemy.orm import Mapped, mapped_column

from horde.storage.database import Base
from horde.timeutil import utcnow


class StoredResponse(Base):
    __tablename__ = "stored_responses"

    #: resp_ and the request id's hex: one stored response per request, whoever delivered it first.
    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"), index=True)
    request_id: Mapped[str] = mapped_column(String(36))
    #: The response object as answered.
    body: Mapped[dict] = mapped_column(JSON)
    #: The chat messages of the conversation up to and including this response's output, without instructions.
    conversation: Mapped[list] = mapped_column(JSON)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
    expires_at: Mapped[dt.datetime] = mapped_column(DateTime, index=True)
