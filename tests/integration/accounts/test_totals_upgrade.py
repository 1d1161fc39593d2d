"""The step 0011 (sql/ and sql/sqlite/) works the users' running totals out of an existing database's ledger and
served requests, once: a database upgraded to the step before it, with a history, then upgraded on."""

from __future__ import annotations

import pytest

from horde.migrations.steps import steps
from horde.models import upgrade_schema
from tests.support.migrations import BlankDatabases

TOTALS_STEP = next(step for step in steps() if step.name.startswith("0011_"))
#: A requester (user 2) whose chat request the old owner's worker (user 1, w-old) served, and a transfer between
#: them; the old owner's 5 kudos of the first schema's rows come from a grant.
HISTORY = """
    INSERT INTO users (username, api_key_hash, kudos, trusted, anonymous, created_at)
        VALUES ('old-requester', 'hash2', 93, false, false, CURRENT_TIMESTAMP);
    UPDATE users SET kudos = 12 WHERE id = 1;
    INSERT INTO chat_requests (id, user_id, state, created_at, finished_at, priority_class, priority, models,
                               max_tokens, context_tokens, prompt_tokens, required_features, required_guarantees,
                               trusted_only, payload, n_images, kudos_estimate, kudos_charged, client_agent, holders,
                               delivered, attempts, progress_seq, worker_id, reply)
        VALUES ('r1', 2, 'done', CURRENT_TIMESTAMP, CURRENT_TIMESTAMP, 0, 0, '["old-model"]', 64, 4096, 8, 0, 0,
                false, '{}', 0, 2, 2, 'x:1:x', 0, true, 1, 0, 'w-old',
                '{"content": "hi", "usage": {"completion_tokens": 40}}');
    INSERT INTO kudos_ledger (user_id, amount, kind, request_id, created_at) VALUES
        (2, 100, 'grant', NULL, CURRENT_TIMESTAMP), (2, -2, 'charge', 'r1', CURRENT_TIMESTAMP),
        (1, 2, 'reward', 'r1', CURRENT_TIMESTAMP), (2, -5, 'gifted', NULL, CURRENT_TIMESTAMP),
        (1, 5, 'received', NULL, CURRENT_TIMESTAMP);
"""
TOTALS = """
    SELECT id, kudos_accumulated, kudos_gifted, kudos_received, kudos_admin, requested_generations, requested_tokens,
           fulfilled_generations, fulfilled_tokens FROM users ORDER BY id
"""


@pytest.fixture(params=["sqlite", "postgresql"])
def blank(request, tmp_path):
    databases = BlankDatabases(request.param, tmp_path)
    yield databases
    databases.drop()


def _totals(database) -> list[tuple]:
    with database.db.read_engine.connect() as connection:
        return [tuple(row) for row in connection.exec_driver_sql(TOTALS)]


def test_existing_users_get_their_totals_once(blank):
    database = blank().made_by_the_first_schema()
    before_totals = [step for step in steps() if step.number < TOTALS_STEP.number]
    upgrade_schema(database.db.engine, before_totals)
    database.run_script(HISTORY)
    upgrade_schema(database.db.engine)
    assert _totals(database) == [(1, 2, 0, 5, 5, 0, 0, 1, 40), (2, -2, -5, 0, 100, 1, 40, 0, 0)]

    # Run again on a database that has the totals (as on one made before migrations were tracked): they stay as
    # the settlements ran them.
    database.run_script(
        "UPDATE users SET requested_tokens = requested_tokens + 1 WHERE id = 2;"
        f"DELETE FROM applied_migrations WHERE name = '{TOTALS_STEP.name}';"
    )
    assert [step.name for step in upgrade_schema(database.db.engine).applied] == [TOTALS_STEP.name]
    assert _totals(database)[1][6] == 41
