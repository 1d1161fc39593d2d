"""The worker table: identity, owner and the declarations re-sent on every pop."""

from __future__ import annotations

import datetime as dt
import uuid

from sqlalchemy import JSON, Boolean, DateTime, Float, ForeignKey, Index, Integer, String, text
from sqlalchemy.orm import Mapped, mapped_column

from horde.storage.database import Base
from horde.timeutil import utcnow

MAX_NAME_CHARS = 100
MAX_INFO_CHARS = 1000
MAX_MAINTENANCE_MSG_CHARS = 300
#: A name's key (horde/workers/names.py) can be longer than the name: case folding turns "ß" into "ss".
MAX_NAME_KEY_CHARS = 400
MAX_ADDRESS_CHARS = 64


class KnownModel(Base):
    """A model some worker declared once: the Horde keeps knowing it after every worker drops it."""

    __tablename__ = "known_models"

    name: Mapped[str] = mapped_column(String(200), primary_key=True)
    first_declared_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)


class Worker(Base):
    __tablename__ = "workers"
    #: No two live workers have names that look alike (a deleted worker holds no key).
    __table_args__ = (Index("ix_workers_name_key", "name_key", unique=True),)

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=lambda: str(uuid.uuid4()))
    name: Mapped[str] = mapped_column(String(MAX_NAME_CHARS), unique=True)
    owner_id: Mapped[int] = mapped_column(ForeignKey("users.id"), index=True)
    models: Mapped[list] = mapped_column(JSON, default=list)
    max_length: Mapped[int] = mapped_column(Integer)
    max_context_length: Mapped[int] = mapped_column(Integer)
    threads: Mapped[int] = mapped_column(Integer, default=1)
    features_mask: Mapped[int] = mapped_column(Integer, default=0)
    guarantees_mask: Mapped[int] = mapped_column(Integer, default=0)
    max_temperature_with_tools: Mapped[float | None] = mapped_column(Float, nullable=True)
    bridge_agent: Mapped[str] = mapped_column(String(300), default="")
    last_pop_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow, index=True)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)

    # Text declarations (horde/text/checkin.py), re-sent on every text pop. A worker pops chat, text or
    # both; each kind has its own models and lengths, and its own last pop for the online window.
    text_models: Mapped[list | None] = mapped_column(JSON, nullable=True)
    text_max_length: Mapped[int | None] = mapped_column(Integer, nullable=True)
    text_max_context_length: Mapped[int | None] = mapped_column(Integer, nullable=True)
    softprompts: Mapped[list | None] = mapped_column(JSON, nullable=True)
    nsfw: Mapped[bool] = mapped_column(Boolean, default=False)
    require_upfront_kudos: Mapped[bool] = mapped_column(Boolean, default=False)
    text_pop_at: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True, index=True)

    # Set by the owner (PUT and DELETE /workers/{id}, horde/registry/manage.py). A worker in maintenance takes no
    # jobs. A deleted worker's row stays for the jobs that name it, renamed at random so that its name is free.
    maintenance: Mapped[bool] = mapped_column(Boolean, default=False)
    maintenance_msg: Mapped[str | None] = mapped_column(String(MAX_MAINTENANCE_MSG_CHARS), nullable=True)
    info: Mapped[str | None] = mapped_column(String(MAX_INFO_CHARS), nullable=True)
    deleted_at: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)

    # Set by moderators and the Horde (docs/reference/moderation.md). A paused worker takes no job, and its pops are
    # answered as if none waited (its owner is not told). `name_key` is what names that look alike share
    # (horde/workers/names.py); `ip_address` the address of its latest check-in, which a moderator may block.
    paused: Mapped[bool] = mapped_column(Boolean, default=False, server_default=text("false"))
    name_key: Mapped[str | None] = mapped_column(String(MAX_NAME_KEY_CHARS), nullable=True)
    ip_address: Mapped[str | None] = mapped_column(String(MAX_ADDRESS_CHARS), nullable=True)
