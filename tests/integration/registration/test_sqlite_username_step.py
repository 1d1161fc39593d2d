"""sql/sqlite/0040_registration.sql on a SQLite database whose users.username is still unique: the table is made
again without the constraint, every row kept (ids, balances, roles), the rows referencing users still valid, and
the step run twice changes nothing more. It runs as the migration runner runs a step: its statements one by one,
in one transaction, with foreign keys on."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from sqlalchemy import create_engine

from horde.models import create_schema

ROOT = Path(__file__).resolve().parents[3]
STEP = ROOT / "sql" / "sqlite" / "0040_registration.sql"


def _statements(text: str) -> list[str]:
    statements, pending = [], ""
    for line in text.splitlines(keepends=True):
        pending += line
        if sqlite3.complete_statement(pending):
            if pending.strip():
                statements.append(pending.strip())
            pending = ""
    return statements


def _apply_step(path: Path) -> None:
    connection = sqlite3.connect(path, isolation_level=None)
    try:
        connection.execute("PRAGMA foreign_keys=ON")
        connection.execute("BEGIN IMMEDIATE")
        for statement in _statements(STEP.read_text(encoding="utf-8")):
            connection.execute(statement)
        connection.execute("COMMIT")
    finally:
        connection.close()


@pytest.fixture
def before_the_step(tmp_path) -> Path:
    """A database of the current schema but users as it was before the step (username unique), with rows."""
    path = tmp_path / "horde.db"
    engine = create_engine(f"sqlite:///{path}")
    create_schema(engine)
    engine.dispose()
    connection = sqlite3.connect(path, isolation_level=None)
    (users_sql,) = connection.execute("SELECT sql FROM sqlite_master WHERE name = 'users'").fetchone()
    connection.executescript(
        # Made again rather than renamed: a rename would point the other tables' references at the old name.
        "PRAGMA foreign_keys=OFF; DROP TABLE users;"
        + users_sql.replace("PRIMARY KEY (id)", "PRIMARY KEY (id), UNIQUE (username)")
        + "; CREATE UNIQUE INDEX ix_users_api_key_hash ON users (api_key_hash);"
    )
    connection.executescript(
        """
        INSERT INTO users (id, username, api_key_hash, kudos, trusted, anonymous, created_at, role, kudos_admin)
            VALUES (1, 'Anonymous', 'h0', 0, 0, 1, '2026-01-01 00:00:00', 'user', 0),
                   (7, 'alice', 'h7', 40, 1, 0, '2026-01-02 00:00:00', 'admin', 40);
        INSERT INTO kudos_ledger (user_id, amount, kind, created_at) VALUES (7, 40, 'grant', '2026-01-02 00:00:00');
        """
    )
    with pytest.raises(sqlite3.IntegrityError):  # the constraint the step removes
        connection.execute(
            "INSERT INTO users (username, api_key_hash, kudos, trusted, anonymous, created_at) "
            "VALUES ('alice', 'h8', 0, 0, 0, '2026-01-03 00:00:00')"
        )
    connection.close()
    return path


def test_the_step_lets_names_repeat_and_keeps_every_row(before_the_step):
    _apply_step(before_the_step)
    _apply_step(before_the_step)  # idempotent
    connection = sqlite3.connect(before_the_step)
    connection.execute("PRAGMA foreign_keys=ON")
    try:
        assert connection.execute("SELECT id, username, kudos, trusted, role FROM users ORDER BY id").fetchall() == [
            (1, "Anonymous", 0, 0, "user"),
            (7, "alice", 40, 1, "admin"),
        ]
        connection.execute(
            "INSERT INTO users (username, api_key_hash, kudos, trusted, anonymous, created_at) "
            "VALUES ('alice', 'h9', 0, 0, 0, '2026-01-03 00:00:00')"
        )
        assert connection.execute("SELECT count(*) FROM users WHERE username = 'alice'").fetchone() == (2,)
        assert connection.execute("PRAGMA foreign_key_check").fetchall() == []
        with pytest.raises(sqlite3.IntegrityError):  # the ledger still refers to users
            connection.execute("INSERT INTO kudos_ledger (user_id, amount, kind, created_at) VALUES (99, 1, 'x', 0)")
        indexes = {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
        assert {"ix_users_username", "ix_users_api_key_hash"} <= indexes
        assert not any(name.startswith("sqlite_autoindex_users") for name in indexes)
        tables = {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        assert "users_before_0040" not in tables
    finally:
        connection.close()


def test_a_user_missing_under_its_id_refuses_the_commit(before_the_step, tmp_path):
    """The deferred check is real: were a referenced user lost on the way, the step would not commit."""
    broken = tmp_path / "broken.sql"
    broken.write_text(
        STEP.read_text(encoding="utf-8").replace("FROM users_before_0040;", "FROM users_before_0040 WHERE id <> 7;")
    )
    connection = sqlite3.connect(before_the_step, isolation_level=None)
    connection.execute("PRAGMA foreign_keys=ON")
    connection.execute("BEGIN IMMEDIATE")
    for statement in _statements(broken.read_text(encoding="utf-8")):
        connection.execute(statement)
    with pytest.raises(sqlite3.IntegrityError):
        connection.execute("COMMIT")
    connection.execute("ROLLBACK")
    assert connection.execute("SELECT count(*) FROM users").fetchone() == (2,)
    connection.close()


def test_a_users_column_the_step_does_not_know_stops_it_rather_than_lose_it(before_the_step):
    connection = sqlite3.connect(before_the_step, isolation_level=None)
    connection.execute("ALTER TABLE users ADD COLUMN unheard_of BOOLEAN DEFAULT 1 NOT NULL")
    connection.close()
    with pytest.raises(sqlite3.IntegrityError, match="CHECK constraint failed"):
        _apply_step(before_the_step)
    connection = sqlite3.connect(before_the_step)
    try:
        assert connection.execute("SELECT id, unheard_of FROM users ORDER BY id").fetchall() == [(1, 1), (7, 1)]
        (users_sql,) = connection.execute("SELECT sql FROM sqlite_master WHERE name = 'users'").fetchone()
        assert "UNIQUE (username)" in users_sql  # untouched: the step rolled back whole
    finally:
        connection.close()
