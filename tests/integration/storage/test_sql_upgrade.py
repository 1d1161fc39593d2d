"""sql/0002_*.sql brings a PostgreSQL database made from the first schema, rows included, to the current one."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from tests.support.databases import PostgresDatabase, postgres_admin_url

ROOT = Path(__file__).resolve().parents[3]
FIRST_SCHEMA = ROOT / "tests" / "support" / "sql" / "0001_schema_first.sql"
CURRENT_SCHEMA = ROOT / "sql" / "0001_schema.sql"
UPGRADES = sorted(path for path in (ROOT / "sql").glob("[0-9][0-9][0-9][0-9]_*.sql") if path != CURRENT_SCHEMA)

COLUMNS = """
    SELECT table_name, column_name, data_type, character_maximum_length, is_nullable, column_default
    FROM information_schema.columns WHERE table_schema = 'public'
"""
INDEXES = "SELECT tablename, indexname, indexdef FROM pg_indexes WHERE schemaname = 'public'"
CONSTRAINTS = """
    SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid)
    FROM pg_constraint WHERE connamespace = 'public'::regnamespace
"""
FUNCTIONS = """
    SELECT proname, pg_get_function_arguments(oid), pg_get_function_result(oid), prosrc
    FROM pg_proc WHERE pronamespace = 'public'::regnamespace
"""
OLD_ROWS = """
    INSERT INTO users (username, api_key_hash, kudos, trusted, anonymous, created_at)
        VALUES ('old-owner', 'hash', 0, false, false, now());
    INSERT INTO workers (id, name, owner_id, models, max_length, max_context_length, threads, features_mask,
                         guarantees_mask, bridge_agent, created_at, last_pop_at)
        VALUES ('w-old', 'old worker', 1, '["old-model"]', 512, 4096, 1, 0, 0, 'old:1:x', now(), now());
"""


@pytest.fixture
def databases():
    admin_url = postgres_admin_url()
    if not admin_url:
        pytest.skip("the SQL upgrade is PostgreSQL's: it needs HORDE_TEST_DATABASE_URL")
    made = [PostgresDatabase(admin_url, prefix="horde_upgrade") for _ in range(2)]
    yield made
    for database in made:
        database.drop()


def _apply(url: str, *scripts: str) -> None:
    engine = create_engine("postgresql+psycopg://" + url.split("://", 1)[1], isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as connection:
            for script in scripts:
                connection.exec_driver_sql(script)
    finally:
        engine.dispose()


def _schema(url: str) -> dict[str, set[tuple]]:
    engine = create_engine("postgresql+psycopg://" + url.split("://", 1)[1])
    try:
        with engine.connect() as connection:
            return {
                name: {tuple(row) for row in connection.execute(text(query))}
                for name, query in (
                    ("columns", COLUMNS),
                    ("indexes", INDEXES),
                    ("constraints", CONSTRAINTS),
                    ("functions", FUNCTIONS),
                )
            }
    finally:
        engine.dispose()


def _read(*paths: Path) -> list[str]:
    return [path.read_text(encoding="utf-8") for path in paths]


def test_the_upgrades_turn_the_first_schema_into_the_current_one(databases):
    upgraded, fresh = databases
    assert UPGRADES, "no sql/0002_*.sql"
    _apply(upgraded.url, *_read(FIRST_SCHEMA), OLD_ROWS, *_read(*UPGRADES))
    _apply(fresh.url, *_read(CURRENT_SCHEMA))
    assert _schema(upgraded.url) == _schema(fresh.url)


def test_existing_rows_get_values_and_their_models_stay_known(databases):
    upgraded, _ = databases
    _apply(upgraded.url, *_read(FIRST_SCHEMA), OLD_ROWS, *_read(*UPGRADES))
    engine = create_engine("postgresql+psycopg://" + upgraded.url.split("://", 1)[1])
    try:
        with engine.connect() as connection:
            worker = connection.execute(
                text("SELECT nsfw, require_upfront_kudos, text_pop_at, maintenance, info, deleted_at FROM workers")
            ).one()
            known = connection.execute(text("SELECT name FROM known_models")).scalars().all()
    finally:
        engine.dispose()
    assert tuple(worker) == (False, False, None, False, None, None)
    assert known == ["old-model"]


def test_the_upgrades_leave_a_current_database_as_it_is(databases):
    current, fresh = databases
    _apply(current.url, *_read(CURRENT_SCHEMA, *UPGRADES))
    _apply(fresh.url, *_read(CURRENT_SCHEMA))
    assert _schema(current.url) == _schema(fresh.url)


def test_the_text_models_of_existing_workers_stay_known(databases):
    """A database from before known_text_models (its table dropped from a current one) gets its workers' text
    models, and only them: a worker that never popped text adds none."""
    upgraded, _ = databases
    workers = """
        INSERT INTO users (username, api_key_hash, kudos, trusted, anonymous, created_at)
            VALUES ('text-owner', 'hash', 0, false, false, now());
        INSERT INTO workers (id, name, owner_id, models, max_length, max_context_length, threads, features_mask,
                             guarantees_mask, bridge_agent, created_at, last_pop_at, nsfw, require_upfront_kudos,
                             text_models, maintenance)
            VALUES ('w-text', 'text worker', 1, '[]', 512, 4096, 1, 0, 0, 'x:1:x', now(), now(), false, false,
                    '["old-text-model", "other-text-model"]', false),
                   ('w-chat', 'chat worker', 1, '["chat-model"]', 512, 4096, 1, 0, 0, 'x:1:x', now(), now(), false,
                    false, NULL, false);
        DROP TABLE known_text_models;
    """
    _apply(upgraded.url, *_read(CURRENT_SCHEMA), workers, *_read(*UPGRADES))
    engine = create_engine("postgresql+psycopg://" + upgraded.url.split("://", 1)[1])
    try:
        with engine.connect() as connection:
            known = connection.execute(text("SELECT name FROM known_text_models ORDER BY name")).scalars().all()
    finally:
        engine.dispose()
    assert known == ["old-text-model", "other-text-model"]
