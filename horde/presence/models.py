"""The serving processes that say they are there."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import DateTime, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from horde.storage.database import Base


class ServerProcess(Base):
    """A serving process without Redis, renewed every beat while it runs (horde/presence/hearing.py)."""

    __tablename__ = "server_processes"

    #: Made at the process's start (a uuid's hex): a restarted process is another.
    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    host: Mapped[str] = mapped_column(String(255))
    pid: Mapped[int] = mapped_column(Integer)
    started_at: Mapped[dt.datetime] = mapped_column(DateTime)
    seen_at: Mapped[dt.datetime] = mapped_column(DateTime)
