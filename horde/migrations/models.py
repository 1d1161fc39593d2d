"""The record of the migration steps a database has."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import DateTime, String
from sqlalchemy.orm import Mapped, mapped_column

from horde.storage.database import Base


class AppliedMigration(Base):
    """One step of sql/ that the database has: run by `python -m horde db upgrade`, or recorded as part of the
    schema when a start created it from the models."""

    __tablename__ = "applied_migrations"

    #: The step's file name without `.sql` (`0002_text_responses_known_models`).
    name: Mapped[str] = mapped_column(String(200), primary_key=True)
    #: SHA-256 (hex) of the step's file for this database's kind, as it was when applied (of nothing, for a step
    #: without statements on this kind): a file changed since is reported, never run again.
    checksum: Mapped[str] = mapped_column(String(64))
    applied_at: Mapped[dt.datetime] = mapped_column(DateTime)
