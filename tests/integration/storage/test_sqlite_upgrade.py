"""sql/sqlite/*.sql bring a SQLite database made before a change of an existing table to the current schema."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from sqlalchemy import create_engine

from horde.models import create_schema

ROOT = Path(__file__).resolve().parents[3]
BACKGROUND_UPGRADE = ROOT / "sql" / "sqlite" / "0028_background_responses.sql"


def _columns(path: Path) -> dict[str, set[tuple]]:
    with sqlite3.connect(path) as connection:
        tables = [row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        # Each column as (name, type, not null, default, primary key): an added column comes last, its place aside.
        return {
            table: {row[1:] for row in connection.execute(f"PRAGMA table_info({table})").fetchall()} for table in tables
        }


def _current(path: Path) -> None:
    engine = create_engine(f"sqlite:///{path}")
    try:
        create_schema(engine)
    finally:
        engine.dispose()


def test_the_background_upgrade_adds_the_progress_flag_with_its_default(tmp_path):
    current, old = tmp_path / "current.db", tmp_path / "old.db"
    _current(current)
    _current(old)
    with sqlite3.connect(old) as connection:  # the database as it was before: no flag, a request in it
        connection.execute("ALTER TABLE chat_requests DROP COLUMN progress_log")
        connection.execute("DROP TABLE progress_entries")
        connection.execute("DROP TABLE background_requests")
        connection.execute(
            "INSERT INTO users (username, api_key_hash, kudos, trusted, anonymous, created_at) "
            "VALUES ('u', 'h', 0, 0, 0, '2026-01-01')"
        )
        connection.execute(
            "INSERT INTO chat_requests (id, user_id, state, created_at, priority_class, priority, models, max_tokens, "
            "context_tokens, prompt_tokens, required_features, required_guarantees, trusted_only, payload, n_images, "
            "kudos_estimate, kudos_charged, client_agent, holders, delivered, attempts, progress_seq) VALUES "
            "('r1', 1, 'done', '2026-01-01', 1, 0, '[\"m\"]', 16, 64, 1, 0, 0, 0, '{}', 0, 1, 1, 'a', 0, 1, 1, 0)"
        )
    with sqlite3.connect(old) as connection:
        connection.executescript(BACKGROUND_UPGRADE.read_text())
    _current(old)  # the server's start creates the new tables
    assert _columns(old) == _columns(current)
    with sqlite3.connect(old) as connection:
        assert connection.execute("SELECT progress_log FROM chat_requests WHERE id = 'r1'").fetchall() == [(0,)]
