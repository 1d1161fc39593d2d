"""Fresh databases for a test run: a SQLite file per test, a PostgreSQL database per run.

PostgreSQL and Redis are used when HORDE_TEST_DATABASE_URL / HORDE_TEST_REDIS_URL
name them; each run creates its own database (and Redis key prefix) and removes
it afterwards, never trusting leftovers.
"""

from __future__ import annotations

import os
import uuid

from sqlalchemy import create_engine, make_url, text

from horde import models
from horde.migrations.models import AppliedMigration

POSTGRES_ENV = "HORDE_TEST_DATABASE_URL"
REDIS_ENV = "HORDE_TEST_REDIS_URL"


def postgres_admin_url() -> str | None:
    return os.environ.get(POSTGRES_ENV) or None


def redis_url() -> str | None:
    return os.environ.get(REDIS_ENV) or None


def _driver_url(url: str) -> str:
    return "postgresql+psycopg://" + url.split("://", 1)[1] if url.startswith("postgresql://") else url


class PostgresDatabase:
    """A database of its own on the server that HORDE_TEST_DATABASE_URL names."""

    def __init__(self, admin_url: str, prefix: str = "horde_test"):
        self.admin_url = admin_url
        self.name = f"{prefix}_{uuid.uuid4().hex[:12]}"
        # The database's name is the URL's path; its query (a Unix socket's ?host=..., say) stays as it is.
        self.url = make_url(admin_url).set(database=self.name).render_as_string(hide_password=False)
        self._admin = create_engine(_driver_url(admin_url), isolation_level="AUTOCOMMIT")
        with self._admin.connect() as connection:
            connection.execute(text(f'CREATE DATABASE "{self.name}"'))

    def truncate(self) -> None:
        engine = create_engine(_driver_url(self.url))
        try:
            # The record of the migrations stays: the schema is still the one it records.
            kept = {AppliedMigration.__tablename__}
            tables = ", ".join(f'"{table.name}"' for table in models.tables() if table.name not in kept)
            with engine.begin() as connection:
                existing = connection.execute(text("SELECT count(*) FROM pg_tables WHERE tablename = 'users'")).scalar()
                if existing:
                    connection.execute(text(f"TRUNCATE {tables} RESTART IDENTITY CASCADE"))
        finally:
            engine.dispose()

    def drop(self) -> None:
        with self._admin.connect() as connection:
            connection.execute(
                text(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                    " WHERE datname = :name AND pid <> pg_backend_pid()"
                ),
                {"name": self.name},
            )
            connection.execute(text(f'DROP DATABASE IF EXISTS "{self.name}"'))
        self._admin.dispose()
