"""The tables of oversight: the Horde's modes (one row), the addresses in timeout, and the audit trail."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import DDL, JSON, Boolean, DateTime, Index, Integer, String, event
from sqlalchemy.orm import Mapped, mapped_column

from horde.storage.database import Base
from horde.timeutil import utcnow

#: The one row of horde_modes.
MODES_ROW_ID = 1
#: The longest network text: an IPv6 address written out in full with its prefix length.
MAX_NETWORK_CHARS = 50
MAX_REASON_CHARS = 500
MAX_ACTOR_CHARS = 160
MAX_TARGET_CHARS = 160


class HordeModes(Base):
    """The modes an admin sets (PUT /api/v2/status/modes); no row: every mode off."""

    __tablename__ = "horde_modes"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    maintenance_mode: Mapped[bool] = mapped_column(Boolean, default=False)
    invite_only_mode: Mapped[bool] = mapped_column(Boolean, default=False)
    raid_mode: Mapped[bool] = mapped_column(Boolean, default=False)
    changed_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)


class AddressTimeout(Base):
    """An address or a network in timeout until `expires_at` (POST /api/v2/operations/ipaddr): every request from it
    is refused with 403 TimeoutIP. A row past its expiry counts for nothing and is dropped by the next change."""

    __tablename__ = "address_timeouts"

    #: The network in its canonical text (horde/oversight/addresses.py): an address alone is its /32 or /128.
    network: Mapped[str] = mapped_column(String(MAX_NETWORK_CHARS), primary_key=True)
    expires_at: Mapped[dt.datetime] = mapped_column(DateTime, index=True)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)


class AuditEntry(Base):
    """One moderator's or admin's action (the API's or the operator's command line), written in the transaction of
    the change it records; never changed nor deleted (horde/oversight/trail.py)."""

    __tablename__ = "audit_entries"
    __table_args__ = (
        Index("ix_audit_entries_target", "target_kind", "target", "id"),
        Index("ix_audit_entries_actor", "actor_id", "id"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
    #: The user who acted; None for the operator's command line.
    actor_id: Mapped[int | None] = mapped_column(Integer, nullable=True)
    #: Who acted, as the trail shows it: `name#id`, or `operator <login>` for the command line.
    actor: Mapped[str] = mapped_column(String(MAX_ACTOR_CHARS))
    #: A horde.oversight.trail.Done.
    action: Mapped[str] = mapped_column(String(40))
    #: What was acted on: "user", "worker", "address" or "modes", and which one (a user's id, a worker's id, a
    #: network, "horde").
    target_kind: Mapped[str] = mapped_column(String(16))
    target: Mapped[str] = mapped_column(String(MAX_TARGET_CHARS))
    #: The changed fields as they were, and as they became (None where nothing was there, or nothing is left).
    before: Mapped[dict | None] = mapped_column(JSON, nullable=True)
    after: Mapped[dict | None] = mapped_column(JSON, nullable=True)
    reason: Mapped[str | None] = mapped_column(String(MAX_REASON_CHARS), nullable=True)


#: PostgreSQL: the function of the trigger that keeps the trail append-only (horde/models.py functions_sql; an
#: UPDATE or DELETE of an entry fails; TRUNCATE, an operator's deliberate wipe, fires no row trigger).
APPEND_ONLY_FUNCTION_SQL = """CREATE OR REPLACE FUNCTION horde_audit_append_only()
RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'the audit trail is append-only: an entry is never changed nor deleted';
END
$$;"""
APPEND_ONLY_TRIGGER_SQL = (
    "CREATE OR REPLACE TRIGGER audit_entries_append_only BEFORE UPDATE OR DELETE ON audit_entries "
    "FOR EACH ROW EXECUTE FUNCTION horde_audit_append_only();"
)
#: SQLite: the same rule, made with the table.
_SQLITE_APPEND_ONLY = [
    f"CREATE TRIGGER IF NOT EXISTS audit_entries_no_{operation.lower()} BEFORE {operation} ON audit_entries "
    "BEGIN SELECT RAISE(ABORT, 'the audit trail is append-only'); END"
    for operation in ("UPDATE", "DELETE")
]
for _statement in _SQLITE_APPEND_ONLY:
    event.listen(AuditEntry.__table__, "after_create", DDL(_statement).execute_if(dialect="sqlite"))
