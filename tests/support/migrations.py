"""Databases for the migrations' tests: empty ones on SQLite or PostgreSQL, made by the first schema (with a few rows
of that time) or by a start, run through `python -m horde`, and their schemas, to compare.

A schema is, on PostgreSQL, its columns, indexes, constraints and functions; on SQLite its columns (name, declared
type without a length, which SQLite does not hold to, NOT NULL, key) and its indexes. SQLite keeps the defaults its
ADD COLUMN needed for existing rows: they are not compared.
"""

from __future__ import annotations

import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import text

from horde.app import init_schema
from horde.config import Settings
from horde.migrations import runner
from horde.migrations.steps import steps
from horde.runtime import Runtime
from horde.storage.database import Database
from tests.support.databases import PostgresDatabase, postgres_admin_url
from tests.support.processes import ROOT, base_env

FIRST_SCHEMA = {
    "postgresql": ROOT / "tests" / "support" / "sql" / "0001_schema_first.sql",
    "sqlite": ROOT / "tests" / "support" / "sql" / "0001_schema_first_sqlite.sql",
}
#: A user with a balance its ledger holds, and a worker, as the first schema kept them (SQL both databases take).
OLD_ROWS = """
    INSERT INTO users (username, api_key_hash, kudos, trusted, anonymous, created_at)
        VALUES ('old-owner', 'hash', 5, false, false, CURRENT_TIMESTAMP);
    INSERT INTO kudos_ledger (user_id, amount, kind, created_at) VALUES (1, 5, 'grant', CURRENT_TIMESTAMP);
    INSERT INTO workers (id, name, owner_id, models, max_length, max_context_length, threads, features_mask,
                         guarantees_mask, bridge_agent, created_at, last_pop_at)
        VALUES ('w-old', 'old worker', 1, '["old-model"]', 512, 4096, 1, 0, 0, 'old:1:x', CURRENT_TIMESTAMP,
                CURRENT_TIMESTAMP);
"""
PG_COLUMNS = """
    SELECT table_name, column_name, data_type, character_maximum_length, is_nullable, column_default
    FROM information_schema.columns WHERE table_schema = 'public'
"""
PG_INDEXES = "SELECT tablename, indexname, indexdef FROM pg_indexes WHERE schemaname = 'public'"
PG_CONSTRAINTS = """
    SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid)
    FROM pg_constraint WHERE connamespace = 'public'::regnamespace
"""
PG_FUNCTIONS = """
    SELECT proname, pg_get_function_arguments(oid), pg_get_function_result(oid), prosrc
    FROM pg_proc WHERE pronamespace = 'public'::regnamespace
"""


class BlankDatabase:
    """A database of its own, empty, on `backend`; dropped by drop()."""

    def __init__(self, backend: str, folder: Path):
        self.backend = backend
        self._postgres = None
        if backend == "postgresql":
            admin_url = postgres_admin_url()
            if not admin_url:
                pytest.skip("PostgreSQL tests need HORDE_TEST_DATABASE_URL")
            self._postgres = PostgresDatabase(admin_url, prefix="horde_migrations")
            self.url = self._postgres.url
        else:
            folder.mkdir(parents=True, exist_ok=True)
            self.url = f"sqlite:///{folder / 'horde.db'}"
        self.db = Database(self.url)

    def run_script(self, script: str) -> None:
        """SQL of several statements, as psql or sqlite3 would run a file."""
        if self.backend == "sqlite":
            with sqlite3.connect(self.url.removeprefix("sqlite:///")) as connection:
                connection.executescript(script)
            return
        with self.db.autocommit_engine.connect() as connection:
            connection.connection.dbapi_connection.execute(script)

    def made_by_the_first_schema(self) -> BlankDatabase:
        self.run_script(FIRST_SCHEMA[self.backend].read_text() + OLD_ROWS)
        return self

    def made_by_a_start(self) -> BlankDatabase:
        runtime = Runtime.build(Settings.from_env({}, database_url=self.url))
        try:
            init_schema(runtime)
        finally:
            runtime.close()
        return self

    def horde(self, *args: str) -> subprocess.CompletedProcess:
        """`python -m horde ARGS` on this database, as an operator runs it, to its end."""
        command = self.start_horde(*args)
        stdout, stderr = command.communicate(timeout=120)
        return subprocess.CompletedProcess(command.args, command.returncode, stdout, stderr)

    def start_horde(self, *args: str) -> subprocess.Popen:
        """`python -m horde ARGS` on this database, started (its output piped, as text)."""
        return subprocess.Popen(
            [sys.executable, "-m", "horde", *args],
            cwd=ROOT,
            env=base_env(self.url),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def status(self) -> runner.Status:
        with self.db.read_engine.connect() as connection:
            return runner.read_status(connection, steps())

    def schema(self) -> dict[str, set[tuple]]:
        with self.db.read_engine.connect() as connection:
            if self.backend == "postgresql":
                return {
                    name: {tuple(row) for row in connection.execute(text(query))}
                    for name, query in (
                        ("columns", PG_COLUMNS),
                        ("indexes", PG_INDEXES),
                        ("constraints", PG_CONSTRAINTS),
                        ("functions", PG_FUNCTIONS),
                    )
                }
            tables = [row[0] for row in connection.exec_driver_sql("SELECT name FROM sqlite_master WHERE type='table'")]
            columns = {
                (table, name, _sqlite_affinity(kind), notnull, key)
                for table in tables
                for _, name, kind, notnull, _default, key in connection.exec_driver_sql(f'PRAGMA table_info("{table}")')
            }
            indexes = {
                (name, table, " ".join(sql.split()))
                for name, table, sql in connection.exec_driver_sql(
                    "SELECT name, tbl_name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL"
                )
            }
            return {"columns": columns, "indexes": indexes}

    def drop(self) -> None:
        self.db.dispose()
        if self._postgres is not None:
            self._postgres.drop()


def _sqlite_affinity(declared: str) -> str:
    """A column's type as SQLite stores it: a length says nothing, and every integer type is the same 64-bit
    INTEGER (SQLite cannot change a column's declared type, nor needs to: a BIGINT step has no SQLite statement)."""
    kind = re.sub(r"\(\d+\)", "", declared)
    return "INTEGER" if kind in ("INTEGER", "BIGINT", "SMALLINT") else kind


class BlankDatabases:
    """Empty databases of one backend, made on demand (each in a folder of its own under `folder` on SQLite); all
    dropped by drop()."""

    def __init__(self, backend: str, folder: Path):
        self.backend, self.folder = backend, folder
        self.made: list[BlankDatabase] = []

    def __call__(self) -> BlankDatabase:
        database = BlankDatabase(self.backend, self.folder / f"db{len(self.made)}")
        self.made.append(database)
        return database

    def drop(self) -> None:
        for database in self.made:
            database.drop()
