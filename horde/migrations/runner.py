"""What a database has of the steps, the refusal of a database that lacks any, and the run of one step.

Every function here runs in the caller's transaction, which has taken the schema's turn first (`take_turn`):
processes that start, or upgrades that run, at once take their turns, so a step runs once and its record is
written with it. On PostgreSQL the turn is a transaction-scoped advisory lock (right behind a pooler in
transaction mode too); on SQLite the transaction's BEGIN IMMEDIATE has taken the write lock already.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection, insert, inspect, select

from horde.migrations.models import AppliedMigration
from horde.migrations.steps import POSTGRESQL, Step, added_column, sqlite_statements, without_transaction
from horde.storage.database import table_of
from horde.timeutil import utcnow

#: pg_advisory_xact_lock's key (one bigint: a keyspace apart from the rate turns' pairs) of the schema's creation
#: and its upgrades: "HSCHEMA" in ASCII.
SCHEMA_LOCK_KEY = 0x48_5343_4845_4D41
UPGRADE_COMMAND = "python -m horde db upgrade"
CHANGED_NOTE = "  (its file changed since it was applied; not run again)"
_APPLIED = table_of(AppliedMigration)


class SchemaBehind(Exception):
    """The database lacks steps this code needs: the server does not start on it. The message is one line that
    names the command."""


@dataclass
class Status:
    """What a database has of `steps`."""

    #: No table at all (but the record's): a start creates the schema from the models and records every step.
    empty: bool
    #: It has the record of its steps (the table applied_migrations).
    tracked: bool
    #: name -> (checksum, applied_at) of every recorded step.
    applied: dict[str, tuple[str, dt.datetime]] = field(default_factory=dict)
    pending: list[Step] = field(default_factory=list)
    #: Recorded steps whose file is no longer what was applied: reported, never run again.
    changed: list[Step] = field(default_factory=list)
    #: Recorded steps this code has no file for (a newer code's).
    unknown: list[str] = field(default_factory=list)


@dataclass
class Upgrade:
    """What an upgrade found, and the steps it ran."""

    before: Status
    applied: list[Step]


def take_turn(connection: Connection) -> None:
    """The schema's turn, for the rest of the caller's transaction (PostgreSQL; SQLite's transaction holds the write
    lock from its BEGIN)."""
    if connection.dialect.name == POSTGRESQL:
        connection.exec_driver_sql(f"SELECT pg_advisory_xact_lock({SCHEMA_LOCK_KEY})")


def read_status(connection: Connection, steps: Sequence[Step]) -> Status:
    tables = set(inspect(connection).get_table_names())
    tracked = AppliedMigration.__tablename__ in tables
    status = Status(empty=not tables - {AppliedMigration.__tablename__}, tracked=tracked)
    if tracked:
        rows = connection.execute(select(_APPLIED.c.name, _APPLIED.c.checksum, _APPLIED.c.applied_at))
        status.applied = {name: (checksum, applied_at) for name, checksum, applied_at in rows}
    dialect = connection.dialect.name
    for step in steps:
        recorded = status.applied.get(step.name)
        if recorded is None:
            status.pending.append(step)
        elif recorded[0] != step.checksum(dialect):
            status.changed.append(step)
    known = {step.name for step in steps}
    status.unknown = sorted(name for name in status.applied if name not in known)
    return status


def refusal(status: Status) -> SchemaBehind | None:
    """Why a server must not start on this database (one line naming the command), or None."""
    if status.empty:
        return None
    if not status.tracked:
        return SchemaBehind(
            "The database keeps no record of its migrations (it was made before they were tracked): run "
            f"`{UPGRADE_COMMAND}`, then start the server again."
        )
    if status.pending:
        names = ", ".join(step.name for step in status.pending)
        return SchemaBehind(
            f"The database lacks {len(status.pending)} migration(s) this code needs ({names}): run "
            f"`{UPGRADE_COMMAND}`, then start the server again."
        )
    return None


def record(connection: Connection, steps: Sequence[Step]) -> None:
    """Record `steps` as applied, with their checksums for this database's kind."""
    if steps:
        now, dialect = utcnow(), connection.dialect.name
        rows = [{"name": step.name, "checksum": step.checksum(dialect), "applied_at": now} for step in steps]
        connection.execute(insert(_APPLIED), rows)


def is_recorded(connection: Connection, step: Step) -> bool:
    """Whether another upgrade recorded `step` while this one waited for its turn."""
    return connection.execute(select(_APPLIED.c.name).where(_APPLIED.c.name == step.name)).first() is not None


def run_step(connection: Connection, step: Step) -> None:
    """The step's statements for this database's kind, in the caller's transaction. PostgreSQL's file goes as it
    is, but for its own BEGIN and COMMIT, in one simple query (its statements are idempotent). On SQLite, an
    `ADD COLUMN` of a column the table has is left out: how a database made before tracked migrations is
    recognised, by its columns (SQLite has no `ADD COLUMN IF NOT EXISTS`)."""
    dbapi_connection: Any = connection.connection.dbapi_connection
    if connection.dialect.name == POSTGRESQL:
        body = without_transaction(step.postgresql)
        if body.strip():
            dbapi_connection.execute(body).close()  # no parameters: psycopg sends it as one simple query
        return
    inspector = inspect(connection)
    for statement in sqlite_statements(step.sqlite):
        target = added_column(statement)
        if target is not None and target[1] in {column["name"] for column in inspector.get_columns(target[0])}:
            continue
        dbapi_connection.execute(statement).close()
        inspector.clear_cache()


def describe(status: Status) -> list[str]:
    """`python -m horde db status`'s lines: every step applied, changed, unknown or pending, then what to do."""
    lines = []
    if status.empty:
        lines.append(f"the database is empty: `{UPGRADE_COMMAND}` (or the server's first start) creates the schema")
    elif not status.tracked:
        lines.append(
            f"the database keeps no record of its migrations (made before they were tracked): `{UPGRADE_COMMAND}` "
            "applies every step it lacks and records them"
        )
    changed = {step.name for step in status.changed}
    for name, (_checksum, applied_at) in sorted(status.applied.items()):
        state = "changed" if name in changed else "unknown" if name in status.unknown else "applied"
        note = {"changed": CHANGED_NOTE, "unknown": "  (no file of this code)"}.get(state, "")
        lines.append(f"{state:8} {name}  {applied_at:%Y-%m-%d %H:%M:%S}{note}")
    lines += [f"pending  {step.name}" for step in status.pending]
    if status.pending and (status.tracked or status.empty):
        lines.append(f"{len(status.pending)} pending: run `{UPGRADE_COMMAND}`")
    return lines


def describe_upgrade(upgrade: Upgrade) -> list[str]:
    """`python -m horde db upgrade`'s lines: what it ran, what it found changed, and where the database stands."""
    before = upgrade.before
    if before.empty:
        return [f"the database was empty: the schema was created and its {len(before.pending)} step(s) recorded"]
    lines = [f"applied  {step.name}" for step in upgrade.applied]
    lines += [f"changed  {step.name}{CHANGED_NOTE}" for step in before.changed]
    skipped = len(before.pending) - len(upgrade.applied)
    if skipped:
        lines.append(f"{skipped} step(s) were applied by another upgrade meanwhile")
    lines.append(f"up to date: {len(upgrade.applied)} step(s) applied now" if upgrade.applied else "up to date")
    return lines
