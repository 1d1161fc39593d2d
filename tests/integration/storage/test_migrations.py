"""Tracked migrations on SQLite and PostgreSQL: `python -m horde db upgrade` and `db status` on an empty database, on
one made by the first schema (rows included), on one made before migrations were tracked, with two upgrades at
once, with a file changed after it was applied, with a step that fails; and the server's refusal of a database
that lacks a step. A database's schema is compared with one a server's start made from the models
(tests/support/migrations.py says what is compared).
"""

from __future__ import annotations

import shutil

import pytest

from horde.migrations import runner
from horde.migrations.runner import SchemaBehind
from horde.migrations.steps import SQL_FOLDER, steps
from horde.models import create_schema, upgrade_schema
from horde.storage.database import Database
from tests.support.ledger import assert_balances_match_ledger
from tests.support.migrations import BlankDatabases
from tests.support.processes import Gunicorn, Server, base_env
from tests.support.races import fire_together

REFUSAL_EXIT = 2
HORDE_WORKER_CLASS = "horde.gunicorn_worker.HordeWorker"
RACE_ROUNDS = 3


@pytest.fixture(params=["sqlite", "postgresql"])
def blank(request, tmp_path):
    """A factory of empty databases on the backend of the test."""
    databases = BlankDatabases(request.param, tmp_path)
    yield databases
    databases.drop()


def test_an_empty_database_gets_the_schema_and_every_step_recorded(blank):
    database = blank()
    status = database.horde("db", "status")
    assert status.returncode == 1 and "the database is empty" in status.stdout
    upgrade = database.horde("db", "upgrade")
    assert upgrade.returncode == 0, upgrade.stderr
    assert f"its {len(steps())} step(s) recorded" in upgrade.stdout
    assert database.horde("db", "status").returncode == 0
    after = database.status()
    assert after.tracked and not after.pending and set(after.applied) == {step.name for step in steps()}
    assert database.schema() == blank().made_by_a_start().schema()


def test_a_database_of_the_first_schema_is_refused_then_upgrades_with_one_command(blank):
    database = blank().made_by_the_first_schema()
    refused = database.horde("serve", "--port", "1")  # refused before it listens
    assert refused.returncode == REFUSAL_EXIT
    assert refused.stderr.strip().splitlines() == [
        "The database keeps no record of its migrations (it was made before they were tracked): run "
        "`python -m horde db upgrade`, then start the server again."
    ]
    status = database.horde("db", "status")
    assert status.returncode == 1
    assert [line.split()[1] for line in status.stdout.splitlines() if line.startswith("pending")] == [
        step.name for step in steps()
    ]

    upgrade = database.horde("db", "upgrade")
    assert upgrade.returncode == 0, upgrade.stderr
    assert [line.split()[1] for line in upgrade.stdout.splitlines() if line.startswith("applied")] == [
        step.name for step in steps()
    ]
    assert database.horde("db", "status").returncode == 0
    assert database.schema() == blank().made_by_a_start().schema()
    with database.db.read_engine.connect() as connection:
        worker = connection.exec_driver_sql("SELECT nsfw, require_upfront_kudos, maintenance, deleted_at FROM workers")
        assert [tuple(bool(value) if value in (0, 1) else value for value in row) for row in worker] == [
            (False, False, False, None)
        ]
        known = connection.exec_driver_sql("SELECT name FROM known_models").scalars().all()
        admin = connection.exec_driver_sql("SELECT kudos_admin FROM users WHERE username = 'old-owner'").scalar()
    assert known == ["old-model"] and admin == 5
    assert_balances_match_ledger(database.db)
    server = Server(base_env(database.url))  # starts now
    server.stop()


def test_a_database_made_before_migrations_were_tracked_is_recognised_and_left_as_it_is(blank):
    """A current schema without its record (as the server made it before this change): the upgrade records every
    step; on SQLite each ADD COLUMN of a column the table has is left out."""
    database = blank().made_by_a_start()
    with database.db.engine.begin() as connection:
        connection.exec_driver_sql("DROP TABLE applied_migrations")
    assert database.status().tracked is False
    with pytest.raises(SchemaBehind, match="keeps no record of its migrations"):
        create_schema(database.db.engine)
    upgrade = upgrade_schema(database.db.engine)
    assert [step.name for step in upgrade.applied] == [step.name for step in steps()]
    assert database.schema() == blank().made_by_a_start().schema()
    assert not database.status().pending


def test_a_server_refuses_a_database_that_lacks_one_step(blank):
    database = blank().made_by_a_start()
    last = steps()[-1]
    with database.db.engine.begin() as connection:
        connection.exec_driver_sql(f"DELETE FROM applied_migrations WHERE name = '{last.name}'")
    line = (
        f"The database lacks 1 migration(s) this code needs ({last.name}): run `python -m horde db upgrade`, "
        "then start the server again."
    )
    refused = database.horde("users", "create", "someone")
    assert (refused.returncode, refused.stderr.strip()) == (REFUSAL_EXIT, line)
    with pytest.raises(RuntimeError) as gunicorn_refused:  # the production command: its processes do not boot
        Gunicorn(base_env(database.url), processes=2, worker_class=HORDE_WORKER_CLASS)
    output = str(gunicorn_refused.value)
    assert line in output and "Worker failed to boot" in output
    assert "SchemaBehind" not in output and "horde/wsgi.py" not in output  # the line, not a traceback of ours
    status = database.horde("db", "status")
    assert status.returncode == 1 and f"pending  {last.name}" in status.stdout
    assert database.horde("db", "upgrade").returncode == 0
    assert database.horde("users", "create", "someone").returncode == 0


@pytest.mark.parametrize("round_", range(RACE_ROUNDS))
def test_two_upgrades_at_once_run_each_step_once(blank, round_):
    database = blank().made_by_the_first_schema()
    twice = [Database(database.url) for _ in range(2)]
    try:
        results = fire_together([lambda db=db: upgrade_schema(db.engine) for db in twice])
    finally:
        for db in twice:
            db.dispose()
    assert [result for result in results if isinstance(result, Exception)] == []
    ran = [[step.name for step in result.applied] for result in results]
    assert sorted(ran[0] + ran[1]) == sorted(step.name for step in steps())  # each step by one of them
    assert database.schema() == blank().made_by_a_start().schema()
    assert_balances_match_ledger(database.db)


def test_two_upgrade_commands_started_together_both_end_well(blank):
    """Two operators' `python -m horde db upgrade`, real processes started at once: one runs each step, the other
    waits its turn and finds it recorded; both exit 0 and the database is current."""
    database = blank().made_by_the_first_schema()
    commands = [database.start_horde("db", "upgrade") for _ in range(2)]
    outputs = [command.communicate(timeout=120) for command in commands]
    assert [command.returncode for command in commands] == [0, 0], outputs
    ran = [line.split()[1] for stdout, _ in outputs for line in stdout.splitlines() if line.startswith("applied")]
    assert sorted(ran) == sorted(step.name for step in steps())
    assert database.horde("db", "status").returncode == 0


def test_a_file_changed_after_it_was_applied_is_reported_and_not_run_again(blank, tmp_path):
    folder = tmp_path / "sql"
    shutil.copytree(SQL_FOLDER, folder)
    database = blank()
    create_schema(database.db.engine, steps(folder))
    changed = steps(folder)[0]
    later = tmp_path / "sql-later"  # the checkout after an edit (a process reads its steps once)
    shutil.copytree(folder, later)
    for path in (later / f"{changed.name}.sql", later / "sqlite" / f"{changed.name}.sql"):
        path.write_text("SELECT no_such_function();\n")  # would fail if it ran
    now = steps(later)
    with database.db.read_engine.connect() as connection:
        status = runner.read_status(connection, now)
    assert [step.name for step in status.changed] == [changed.name] and not status.pending
    assert any(line.startswith(f"changed  {changed.name}") for line in runner.describe(status))
    upgrade = upgrade_schema(database.db.engine, now)
    assert upgrade.applied == []
    assert runner.describe_upgrade(upgrade)[0].startswith(f"changed  {changed.name}  (its file changed")
    create_schema(database.db.engine, now)  # a start is not refused for it


def test_the_text_models_of_existing_workers_stay_known(blank):
    """A database from before known_text_models (its table dropped from a current one, as a database between
    sql/0002 and sql/0009 had none) gets its workers' text models, and only them."""
    database = blank().made_by_a_start()
    database.run_script(
        """
        INSERT INTO users (username, api_key_hash, kudos, trusted, anonymous, created_at)
            VALUES ('text-owner', 'hash', 0, false, false, CURRENT_TIMESTAMP);
        INSERT INTO workers (id, name, owner_id, models, max_length, max_context_length, threads, features_mask,
                             guarantees_mask, bridge_agent, created_at, last_pop_at, nsfw, require_upfront_kudos,
                             text_models, maintenance)
            VALUES ('w-text', 'text worker', 2, '[]', 512, 4096, 1, 0, 0, 'x:1:x', CURRENT_TIMESTAMP,
                    CURRENT_TIMESTAMP, false, false, '["old-text-model", "other-text-model"]', false),
                   ('w-chat', 'chat worker', 2, '["chat-model"]', 512, 4096, 1, 0, 0, 'x:1:x', CURRENT_TIMESTAMP,
                    CURRENT_TIMESTAMP, false, false, NULL, false);
        DROP TABLE known_text_models;
        DROP TABLE applied_migrations;
        """
    )
    upgrade_schema(database.db.engine)
    with database.db.read_engine.connect() as connection:
        known = connection.exec_driver_sql("SELECT name FROM known_text_models ORDER BY name").scalars().all()
    assert known == ["old-text-model", "other-text-model"]


def test_a_step_that_fails_leaves_neither_its_statements_nor_its_record(blank, tmp_path):
    """Each step runs in a transaction of its own with its record: one that fails half-way is rolled back whole,
    the steps before it stay applied, and the next upgrade runs it again."""
    folder = tmp_path / "sql"
    shutil.copytree(SQL_FOLDER, folder)
    first, second = steps()[0], steps()[1]
    for path in (folder / f"{second.name}.sql", folder / "sqlite" / f"{second.name}.sql"):
        statements = path.read_text()
        index_created = "CREATE INDEX IF NOT EXISTS ix_chat_jobs_worker_state ON chat_jobs (worker_id, state);"
        assert index_created in statements
        path.write_text(statements.replace(index_created, index_created + "\nSELECT no_such_function();", 1))
    database = blank().made_by_the_first_schema()
    with pytest.raises(Exception, match=r"no_such_function|no such function"):
        upgrade_schema(database.db.engine, steps(folder))
    with database.db.read_engine.connect() as connection:
        status = runner.read_status(connection, steps())
        indexes = database.schema()["indexes"]
    assert first.name in status.applied and second.name not in status.applied
    assert not any("ix_chat_jobs_worker_state" in str(index) for index in indexes)
    assert upgrade_schema(database.db.engine).applied[0].name == second.name
    assert database.schema() == blank().made_by_a_start().schema()
