"""Every process creates the schema when it starts (the tables it lacks, and on PostgreSQL the functions, replaced):
several processes starting at once take turns (horde/models.py), so none trips over another's CREATE TABLE or
replacement of the same function, and none needs init_schema's retries to start."""

from __future__ import annotations

import pytest
from sqlalchemy import create_engine, text

from horde.models import create_schema
from horde_testing.databases import PostgresDatabase, postgres_admin_url
from horde_testing.races import fire_together

STARTERS = 6
ROUNDS = 5


@pytest.fixture
def database():
    admin_url = postgres_admin_url()
    if not admin_url:
        pytest.skip("the schema's functions are PostgreSQL's: they need HORDE_TEST_DATABASE_URL")
    made = PostgresDatabase(admin_url, prefix="horde_schema")
    yield made
    made.drop()


def test_processes_starting_at_once_all_create_the_schema(database):
    engines = [create_engine("postgresql+psycopg://" + database.url.split("://", 1)[1]) for _ in range(STARTERS)]
    try:
        for _ in range(ROUNDS):
            results = fire_together([lambda engine=engine: create_schema(engine) for engine in engines])
            assert [result for result in results if isinstance(result, Exception)] == []
        with engines[0].connect() as connection:
            assert (
                connection.execute(text("SELECT count(*) FROM pg_proc WHERE proname = 'horde_rate_turn'")).scalar() == 1
            )
    finally:
        for engine in engines:
            engine.dispose()
