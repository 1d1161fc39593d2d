"""Every table of the Horde, and the creation of the schema from them.

Importing this module registers each domain's tables with `Base.metadata`; horde/storage/database.py knows none of
them (the domains' models import it, not the other way round).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from sqlalchemy import Connection, Engine, Table, inspect

from horde.accounts import rate_limit
from horde.accounts.models import KudosEntry, RateCount, User
from horde.background.models import BackgroundRequest, ProgressEntry
from horde.batches.models import Batch, BatchLine
from horde.chat import request_rows as chat_rows
from horde.chat.models import ChatJob, ChatRequest, ChatRequestModel
from horde.files.models import FileChunk, StoredFile
from horde.migrations import runner
from horde.migrations.models import AppliedMigration
from horde.migrations.steps import Step
from horde.migrations.steps import steps as migration_steps
from horde.oai.idempotency_models import IdempotencyKey
from horde.oai.responses.models import StoredResponse
from horde.oversight.models import (
    APPEND_ONLY_FUNCTION_SQL,
    APPEND_ONLY_TRIGGER_SQL,
    AddressTimeout,
    AuditEntry,
    HordeModes,
)
from horde.presence.models import ServerProcess
from horde.registration.models import Invite, OidcIdentity, RegistrationCount, SignInSession
from horde.stats.models import QueueSample, ServedMark, ServedMinute, ServedTotal, UserUsageDay
from horde.storage.database import Base, table_of
from horde.storage.secrets import ServerSecret
from horde.text import admission as text_admission
from horde.text import known_models
from horde.text import models as text_models
from horde.text.models import KnownTextModel, TextJob, TextRequest, TextRequestModel
from horde.workers import names as worker_names
from horde.workers.models import KnownModel, Worker

MODELS = (
    User,
    KudosEntry,
    RateCount,
    Worker,
    KnownModel,
    ChatRequest,
    ChatRequestModel,
    ChatJob,
    IdempotencyKey,
    StoredResponse,
    ServerSecret,
    BackgroundRequest,
    ProgressEntry,
    TextRequest,
    TextRequestModel,
    TextJob,
    KnownTextModel,
    ServedMark,
    ServedTotal,
    ServedMinute,
    UserUsageDay,
    QueueSample,
    AppliedMigration,
    ServerProcess,
    StoredFile,
    FileChunk,
    Batch,
    BatchLine,
    Invite,
    RegistrationCount,
    OidcIdentity,
    SignInSession,
    HordeModes,
    AddressTimeout,
    AuditEntry,
)


#: Tables whose first rows come from other tables when a start creates them on a database that already has a past
#: (its workers table): such a start is an upgrade, and what the upgrade file would have filled is filled here.
FILLED_ON_CREATION: dict[str, Callable[[Connection], None]] = {
    KnownTextModel.__tablename__: known_models.fill_from_workers,
}


def create_schema(engine: Engine, steps: Sequence[Step] | None = None) -> None:
    """What every start does, in one transaction that processes starting at once take in turn (horde/migrations/):
    refuse a database that lacks a step of sql/ (SchemaBehind, whose message names the command); create every table
    and index that does not exist yet (filling those of FILLED_ON_CREATION), and on PostgreSQL the functions
    (replaced). An empty database gets the schema of the models, which is the current one: every step is recorded
    as applied."""
    steps = migration_steps() if steps is None else steps
    with engine.begin() as connection:
        runner.take_turn(connection)
        status = runner.read_status(connection, steps)
        refused = runner.refusal(status)
        if refused is not None:
            raise refused
        _create_missing_tables(connection)
        if _has_columns(connection, Worker.__tablename__, {"name_key", "deleted_at"}):  # a schema past sql/0018_*
            worker_names.fill_missing_keys(connection)  # workers from before name keys
        if status.empty:
            runner.record(connection, status.pending)
        if engine.dialect.name == "postgresql":
            for function in functions_sql():
                connection.exec_driver_sql(function)


def upgrade_schema(engine: Engine, steps: Sequence[Step] | None = None) -> runner.Upgrade:
    """`python -m horde db upgrade`: run the steps the database lacks, in order, each in a transaction of its own
    with its record (a step another upgrade recorded meanwhile is not run again), then what a start does. On
    SQLite the missing tables are created first, from the models, so that a step's columns find their table; the
    tables of FILLED_ON_CREATION among them are filled after the steps, whose columns they read. An empty database
    gets the schema as a start makes it."""
    steps = migration_steps() if steps is None else steps
    unfilled: list[str] = []
    with engine.begin() as connection:
        runner.take_turn(connection)
        before = runner.read_status(connection, steps)
        if not before.empty:
            if engine.dialect.name == "sqlite":
                unfilled = _create_missing_tables(connection, fill=False)
            else:
                table_of(AppliedMigration).create(connection, checkfirst=True)
    applied = []
    for step in [] if before.empty else before.pending:
        with engine.begin() as connection:
            runner.take_turn(connection)
            if runner.is_recorded(connection, step):
                continue
            runner.run_step(connection, step)
            runner.record(connection, [step])
        applied.append(step)
    if unfilled:
        with engine.begin() as connection:
            runner.take_turn(connection)
            for name in unfilled:
                FILLED_ON_CREATION[name](connection)
    create_schema(engine, steps)
    return runner.Upgrade(before, applied)


def _has_columns(connection: Connection, table: str, names: set[str]) -> bool:
    """Whether a table has these columns: an upgrade run up to an older step (tests, staged upgrades) has not."""
    return names <= {column["name"] for column in inspect(connection).get_columns(table)}


def _create_missing_tables(connection: Connection, *, fill: bool = True) -> list[str]:
    """Create the tables and indexes the database lacks. On a database that has a past (its workers table), the
    tables of FILLED_ON_CREATION it created are filled (`fill`), or returned to be filled later."""
    existing = set(inspect(connection).get_table_names())
    Base.metadata.create_all(connection)
    if Worker.__tablename__ not in existing:
        return []
    created = [name for name in FILLED_ON_CREATION if name not in existing]
    if not fill:
        return created
    for name in created:
        FILLED_ON_CREATION[name](connection)
    return []


def functions_sql() -> list[str]:
    """The PostgreSQL functions the statements call, as CREATE OR REPLACE FUNCTION, and the triggers that call
    functions (the audit trail's), as CREATE OR REPLACE TRIGGER."""
    return [
        rate_limit.turn_function_sql(),
        chat_rows.IN_FLIGHT_FUNCTION_SQL,
        text_admission.IN_FLIGHT_FUNCTION_SQL,
        APPEND_ONLY_FUNCTION_SQL,
        APPEND_ONLY_TRIGGER_SQL,
        text_models.ENDED_FUNCTION_SQL,
        text_models.ENDED_TRIGGER_SQL,
    ]


def tables() -> list[Table]:
    """Every table, each after the tables it references."""
    return list(Base.metadata.sorted_tables)
