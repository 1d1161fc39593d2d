"""What a background request keeps in the database, so that any server process can answer for it.

A background request is a chat request nobody's connection holds: its dialect answers at once and the client
comes back for it (polls it, streams it from any point, cancels it). Two tables:

- `background_requests`: the dialect's record of it (its public id, its owner, the request, and the dialect's
  recipe for rendering its answer: opaque here), kept until `expires_at`;
- `progress_entries`: the text each progress post of the request added, in order, when its progress is kept
  (chat_requests.progress_log): the durable source of its stream's deltas (docs/decisions/0031).
"""

from __future__ import annotations

import datetime as dt

from sqlalchemy import JSON, DateTime, ForeignKey, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from horde.storage.database import Base
from horde.timeutil import utcnow


class BackgroundRequest(Base):
    __tablename__ = "background_requests"

    #: The dialect's public id (a Responses API `resp_...`).
    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"), index=True)
    request_id: Mapped[str] = mapped_column(String(36), unique=True)
    #: What the dialect needs to render the request's answer and events (its own shape, read by it alone).
    recipe: Mapped[dict] = mapped_column(JSON)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
    expires_at: Mapped[dt.datetime] = mapped_column(DateTime, index=True)


class ProgressEntry(Base):
    """What one progress post added to the text of its job: the deltas, never the whole text again."""

    __tablename__ = "progress_entries"

    request_id: Mapped[str] = mapped_column(String(36), primary_key=True)
    #: The request's progress_seq that the post set: increasing, in the order the posts were stored.
    seq: Mapped[int] = mapped_column(Integer, primary_key=True)
    job_id: Mapped[str] = mapped_column(String(36))
    content: Mapped[str] = mapped_column(Text, default="")
    reasoning: Mapped[str] = mapped_column(Text, default="")
