"""sql/0011_*.sql works the users' running totals out of an existing database's ledger and served requests, once."""

from __future__ import annotations

import pytest
from sqlalchemy import create_engine, text

from tests.integration.storage.test_sql_upgrade import FIRST_SCHEMA, OLD_ROWS, UPGRADES, _apply, _read
from tests.support.databases import PostgresDatabase, postgres_admin_url

TOTALS_UPGRADE = next(path for path in UPGRADES if path.name.startswith("0011_"))
BEFORE = [path for path in UPGRADES if path.name < TOTALS_UPGRADE.name]
#: A requester (user 2) whose chat request the old owner's worker (user 1, w-old) served, and a transfer between them.
HISTORY = """
    INSERT INTO users (username, api_key_hash, kudos, trusted, anonymous, created_at)
        VALUES ('old-requester', 'hash2', 93, false, false, now());
    UPDATE users SET kudos = 7 WHERE id = 1;
    INSERT INTO chat_requests (id, user_id, state, created_at, finished_at, priority_class, priority, models,
                               max_tokens, context_tokens, prompt_tokens, required_features, required_guarantees,
                               trusted_only, payload, n_images, kudos_estimate, kudos_charged, client_agent, holders,
                               delivered, attempts, progress_seq, worker_id, reply)
        VALUES ('r1', 2, 'done', now(), now(), 0, 0, '["old-model"]', 64, 4096, 8, 0, 0, false, '{}', 0, 2, 2,
                'x:1:x', 0, true, 1, 0, 'w-old', '{"content": "hi", "usage": {"completion_tokens": 40}}');
    INSERT INTO kudos_ledger (user_id, amount, kind, request_id, created_at) VALUES
        (2, 100, 'grant', NULL, now()), (2, -2, 'charge', 'r1', now()), (1, 2, 'reward', 'r1', now()),
        (2, -5, 'gifted', NULL, now()), (1, 5, 'received', NULL, now());
"""
TOTALS = """
    SELECT id, kudos_accumulated, kudos_gifted, kudos_received, kudos_admin, requested_generations, requested_tokens,
           fulfilled_generations, fulfilled_tokens FROM users ORDER BY id
"""


@pytest.fixture
def old_database():
    admin_url = postgres_admin_url()
    if not admin_url:
        pytest.skip("the SQL upgrade is PostgreSQL's: it needs HORDE_TEST_DATABASE_URL")
    database = PostgresDatabase(admin_url, prefix="horde_upgrade")
    yield database
    database.drop()


def _totals(url: str) -> list[tuple]:
    engine = create_engine("postgresql+psycopg://" + url.split("://", 1)[1])
    try:
        with engine.connect() as connection:
            return [tuple(row) for row in connection.execute(text(TOTALS))]
    finally:
        engine.dispose()


def test_existing_users_get_their_totals_once(old_database):
    upgraded = old_database
    _apply(upgraded.url, *_read(FIRST_SCHEMA), OLD_ROWS, *_read(*BEFORE), HISTORY, *_read(TOTALS_UPGRADE))
    expected = [(1, 2, 0, 5, 0, 0, 0, 1, 40), (2, -2, -5, 0, 100, 1, 40, 0, 0)]
    assert _totals(upgraded.url) == expected
    _apply(upgraded.url, "UPDATE users SET requested_tokens = requested_tokens + 1 WHERE id = 2", *_read(*UPGRADES))
    assert _totals(upgraded.url)[1][6] == 41  # applied again, the upgrade leaves the totals as they run
