"""PostgreSQL's plans (decisions 0020 and 0025). The walking pool's sessions keep one plan per prepared statement:
with the tables' statistics, PostgreSQL's default planned a pop's claim again on every run; its statements carry
their states as literals, so that one plan is the plan for those states. The other pools plan as PostgreSQL does
by default, for the values given: a bound state (`state = $1`) needs a plan for its value on a Horde that keeps
its history. A URL's own session options are kept beside the Horde's. Behind a pooler in transaction mode
(decision 0032) nothing is prepared, and the walking pool's settings last each of its transactions alone."""

from __future__ import annotations

from urllib.parse import quote

import pytest

from horde.storage.database import Database

ENGINES = ("engine", "autocommit_engine", "walking_engine")
PLANNING_FOR_THE_VALUES = ("engine", "autocommit_engine")
WALKING = ("plan_cache_mode", "enable_sort", "synchronous_commit")


def _setting(engine, name: str) -> str:
    with engine.connect() as connection:
        return connection.exec_driver_sql(f"SHOW {name}").scalar()


def test_the_walking_pools_sessions_keep_one_plan_per_prepared_statement(postgresql_runtime):
    assert _setting(postgresql_runtime.db.walking_engine, "plan_cache_mode") == "force_generic_plan"


@pytest.mark.parametrize("engine_name", PLANNING_FOR_THE_VALUES)
def test_the_other_pools_sessions_plan_for_the_values_given(postgresql_runtime, engine_name):
    assert _setting(getattr(postgresql_runtime.db, engine_name), "plan_cache_mode") == "auto"


def test_a_prepared_statement_on_the_walking_pool_runs_its_generic_plan_from_the_first_run(postgresql_runtime):
    """The plan is one for any value ($1 in it), though statistics would make a plan for the value look cheaper."""
    with postgresql_runtime.db.walking_engine.connect() as connection:
        connection.exec_driver_sql("CREATE TEMPORARY TABLE plan_probe (n integer PRIMARY KEY)")
        connection.exec_driver_sql("INSERT INTO plan_probe SELECT generate_series(1, 1000)")
        connection.exec_driver_sql("ANALYZE plan_probe")
        connection.exec_driver_sql("PREPARE probe(integer) AS SELECT n FROM plan_probe WHERE n = $1")
        plan = "\n".join(row[0] for row in connection.exec_driver_sql("EXPLAIN EXECUTE probe(7)"))
        connection.exec_driver_sql("DEALLOCATE probe")
    assert "$1" in plan


def test_the_urls_own_session_options_are_kept(postgresql_runtime):
    url = postgresql_runtime.db.url
    separator = "&" if "?" in url else "?"
    own = Database(f"{url}{separator}options={quote('-c statement_timeout=12345')}")
    try:
        for engine_name in ENGINES:
            engine = getattr(own, engine_name)
            assert _setting(engine, "statement_timeout") == "12345ms"
        assert _setting(own.walking_engine, "plan_cache_mode") == "force_generic_plan"
        assert _setting(own.walking_engine, "enable_sort") == "off"
    finally:
        own.dispose()


def test_behind_a_transaction_pooler_the_walking_settings_last_one_transaction_and_nothing_is_prepared(
    postgresql_runtime,
):
    """HORDE_DATABASE_POOLER=transaction (decision 0032): no session option, no prepared statement; the walking
    pool's transaction starts with its settings, which end with it."""
    behind = Database(postgresql_runtime.db.url, pooler="transaction")
    try:
        for engine_name in ENGINES:
            with getattr(behind, engine_name).connect() as connection:
                assert connection.connection.dbapi_connection.prepare_threshold is None
        with behind.autocommit(walk_indexes=True) as session:
            connection = session.connection()
            assert [_shown(connection, name) for name in WALKING] == ["force_generic_plan", "off", "off"]
            assert connection.exec_driver_sql("SELECT now() = statement_timestamp()").scalar() is False  # a transaction
            backend = connection.exec_driver_sql("SELECT pg_backend_pid()").scalar()
        with behind.walking_engine.connect() as connection:  # the same server session, its transaction over
            raw = connection.connection.dbapi_connection  # statements of their own, outside a walking transaction
            assert raw.execute("SELECT pg_backend_pid()").fetchone()[0] == backend
            assert [raw.execute(f"SHOW {name}").fetchone()[0] for name in WALKING] == ["auto", "on", "on"]
    finally:
        behind.dispose()


def test_unset_the_walking_pool_keeps_its_session_options_and_prepares_as_before(postgresql_runtime):
    for engine_name in ENGINES:
        with getattr(postgresql_runtime.db, engine_name).connect() as connection:
            assert connection.connection.dbapi_connection.prepare_threshold == 5  # psycopg's default
    with postgresql_runtime.db.autocommit(walk_indexes=True) as session:
        connection = session.connection()
        assert connection.exec_driver_sql("SELECT now() = statement_timestamp()").scalar() is True  # autocommit


def _shown(connection, name: str) -> str:
    return connection.exec_driver_sql(f"SHOW {name}").scalar()
