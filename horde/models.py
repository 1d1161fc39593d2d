"""Every table of the Horde, and the creation of the schema from them.

Importing this module registers each domain's tables with `Base.metadata`; horde/database.py knows none of
them (the domains' models import it, not the other way round).
"""

from __future__ import annotations

from sqlalchemy import Engine, Table

from horde.accounts import rate_limit
from horde.accounts.models import KudosEntry, RateCount, User
from horde.chat.models import ChatJob, ChatRequest, ChatRequestModel
from horde.database import Base
from horde.oai.idempotency_models import IdempotencyKey
from horde.oai.responses.models import StoredResponse
from horde.stats.models import ServedMark, ServedMinute, ServedTotal
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
    TextRequest,
    TextRequestModel,
    TextJob,
    KnownTextModel,
    ServedMark,
    ServedTotal,
    ServedMinute,
)


#: pg_advisory_xact_lock's key (one bigint: a keyspace apart from the rate turns' pairs) of the schema's
#: creation: processes that start together create it one after the other. "HSCHEMA" in ASCII.
SCHEMA_LOCK_KEY = 0x48_5343_4845_4D41


def create_schema(engine: Engine) -> None:
    """Create every table and index that does not exist yet, and on PostgreSQL the functions (replaced), in one
    transaction that processes starting at once take in turn."""
    if engine.dialect.name != "postgresql":
        Base.metadata.create_all(engine)
        return
    with engine.begin() as connection:
        connection.exec_driver_sql(f"SELECT pg_advisory_xact_lock({SCHEMA_LOCK_KEY})")
        Base.metadata.create_all(connection)
        for function in functions_sql():
            connection.exec_driver_sql(function)


def functions_sql() -> list[str]:
    """The PostgreSQL functions the statements call, as CREATE OR REPLACE FUNCTION."""
    return [rate_limit.turn_function_sql()]


def tables() -> list[Table]:
    """Every table, each after the tables it references."""
    return list(Base.metadata.sorted_tables)
