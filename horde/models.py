"""Every table of the Horde, and the creation of the schema from them.

Importing this module registers each domain's tables with `Base.metadata`; horde/storage/database.py knows none of
them (the domains' models import it, not the other way round).
"""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import Connection, Engine, Table, inspect

from horde.accounts import rate_limit
from horde.accounts.models import KudosEntry, RateCount, User
from horde.chat.models import ChatJob, ChatRequest, ChatRequestModel
from horde.oai.idempotency_models import IdempotencyKey
from horde.oai.responses.models import StoredResponse
from horde.registration.models import Invite, OidcIdentity, RegistrationCount, SignInSession
from horde.stats.models import ServedMark, ServedMinute, ServedTotal
from horde.storage.database import Base
from horde.storage.secrets import ServerSecret
from horde.text import known_models
from horde.text.models import KnownTextModel, TextJob, TextRequest, TextRequestModel
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
    TextRequest,
    TextRequestModel,
    TextJob,
    KnownTextModel,
    ServedMark,
    ServedTotal,
    ServedMinute,
    Invite,
    RegistrationCount,
    OidcIdentity,
    SignInSession,
)


#: pg_advisory_xact_lock's key (one bigint: a keyspace apart from the rate turns' pairs) of the schema's
#: creation: processes that start together create it one after the other. "HSCHEMA" in ASCII.
SCHEMA_LOCK_KEY = 0x48_5343_4845_4D41


#: Tables whose first rows come from other tables when a start creates them on a database that already has a past
#: (its workers table): such a start is an upgrade, and what the upgrade file would have filled is filled here.
FILLED_ON_CREATION: dict[str, Callable[[Connection], None]] = {
    KnownTextModel.__tablename__: known_models.fill_from_workers,
}


def create_schema(engine: Engine) -> None:
    """Create every table and index that does not exist yet (filling those of FILLED_ON_CREATION), and on
    PostgreSQL the functions (replaced), in one transaction that processes starting at once take in turn (the
    advisory lock; SQLite's first statement takes its write lock)."""
    with engine.begin() as connection:
        if engine.dialect.name == "postgresql":
            connection.exec_driver_sql(f"SELECT pg_advisory_xact_lock({SCHEMA_LOCK_KEY})")
        existing = set(inspect(connection).get_table_names())
        Base.metadata.create_all(connection)
        if Worker.__tablename__ in existing:
            for name, fill in FILLED_ON_CREATION.items():
                if name not in existing:
                    fill(connection)
        if engine.dialect.name == "postgresql":
            for function in functions_sql():
                connection.exec_driver_sql(function)


def functions_sql() -> list[str]:
    """The PostgreSQL functions the statements call, as CREATE OR REPLACE FUNCTION."""
    return [rate_limit.turn_function_sql()]


def tables() -> list[Table]:
    """Every table, each after the tables it references."""
    return list(Base.metadata.sorted_tables)
