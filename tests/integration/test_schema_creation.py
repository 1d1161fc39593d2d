"""Every process creates the schema when it starts (the tables it lacks, and on PostgreSQL the functions, replaced):
several processes starting at once take turns (horde/models.py), so none trips over another's CREATE TABLE or
replacement of the same function, and none needs init_schema's retries to start."""

from __future__ import annotations

import pytest
from sqlalchemy import create_engine, text

from horde.models import create_schema
from tests.support.databases import PostgresDatabase, postgres_admin_url
from tests.support.races import fire_together

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


def test_a_start_that_creates_known_text_models_fills_it_from_the_workers(runtime, make_user):
    """An upgrade by restart (SQLite has no upgrade files; an operator may start before applying sql/0009): the
    text models the workers declared stay known. A start that finds the table leaves it as it is."""
    from sqlalchemy import insert

    from horde.text import known_models
    from horde.workers.models import Worker

    owner, _ = make_user("old-owner")
    declarations = [["old-text-model", "other-text-model"], None, ["other-text-model"]]
    with runtime.db.transaction() as session:
        for index, text_models in enumerate(declarations):
            session.execute(
                insert(Worker).values(
                    name=f"old-{index}",
                    owner_id=owner.id,
                    models=["chat-model"],
                    max_length=512,
                    max_context_length=4096,
                    text_models=text_models,
                )
            )
        session.connection().exec_driver_sql("DROP TABLE known_text_models")

    create_schema(runtime.db.engine)
    wanted = ["old-text-model", "other-text-model", "chat-model"]
    with runtime.db.read() as session:
        assert known_models.remembered(session, wanted) == {"old-text-model", "other-text-model"}

    with runtime.db.transaction() as session:
        session.connection().exec_driver_sql("DELETE FROM known_text_models WHERE name = 'other-text-model'")
    create_schema(runtime.db.engine)  # the table is there: nothing is filled again
    with runtime.db.read() as session:
        assert known_models.remembered(session, wanted) == {"old-text-model"}
