"""SQLite's write-ahead log: the commits leave it to the checkpoints of horde/storage/sqlite_checkpoint.py,
which copy it into the database file from a thread.

What reached the file is read with `immutable=1`, which reads the file alone and never the log."""

from __future__ import annotations

import sqlite3
import time

import gevent
import pytest
from sqlalchemy import text

from horde.storage.database import SQLITE_AUTOCHECKPOINT_PAGES, Database
from horde.storage.sqlite_checkpoint import run_checkpoints

ROW_BYTES = 3000  # a row to a page
CHECKPOINT_WAIT_S = 10.0
TORN_READ_RETRY_S = 0.01


@pytest.fixture
def database_file(tmp_path):
    """A SQLite file in log mode whose table `filler` is already in the file itself."""
    path = tmp_path / "checkpoints.db"
    connection = sqlite3.connect(path, isolation_level=None)
    connection.execute("PRAGMA journal_mode=WAL")
    connection.execute("CREATE TABLE filler (id INTEGER PRIMARY KEY, data BLOB)")
    connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    connection.close()
    return path


@pytest.fixture
def database(database_file):
    db = Database(f"sqlite:///{database_file}")
    yield db
    db.engine.dispose()
    db.read_engine.dispose()


def rows_in_the_file(path) -> int:
    """The rows the file itself holds. A read that meets pages a running checkpoint is still copying finds the file
    malformed (`immutable=1` takes no lock): it reads again once the checkpoint has gone on."""
    deadline = time.monotonic() + CHECKPOINT_WAIT_S
    while True:
        connection = sqlite3.connect(f"file:{path}?immutable=1", uri=True)
        try:
            return connection.execute("SELECT count(*) FROM filler").fetchone()[0]
        except sqlite3.DatabaseError as exc:
            if "malformed" not in str(exc) or time.monotonic() > deadline:
                raise
        finally:
            connection.close()
        gevent.sleep(TORN_READ_RETRY_S)


def fill(database: Database, rows: int, per_transaction: int = 100) -> None:
    for start in range(0, rows, per_transaction):
        with database.transaction() as session:
            session.connection().execute(
                text("INSERT INTO filler (data) VALUES (randomblob(:size))"),
                [{"size": ROW_BYTES}] * min(per_transaction, rows - start),
            )


def test_the_database_knows_its_file(database, database_file):
    assert database.sqlite_file == str(database_file)
    assert Database("sqlite:///:memory:").sqlite_file is None


def test_commits_leave_the_log_past_sqlites_default_to_the_checkpoints(database, database_file):
    with database.transaction() as session:
        assert session.connection().scalar(text("PRAGMA wal_autocheckpoint")) == SQLITE_AUTOCHECKPOINT_PAGES
    fill(database, 1500)  # past SQLite's own default of 1,000 pages, under ours
    assert rows_in_the_file(database_file) == 0
    with database.read() as session:
        assert session.connection().scalar(text("SELECT count(*) FROM filler")) == 1500


def test_the_checkpoints_copy_the_log_into_the_file(database, database_file):
    fill(database, 50)
    checkpoints = gevent.spawn(run_checkpoints, str(database_file), 0.05)
    try:
        deadline = time.monotonic() + CHECKPOINT_WAIT_S
        while rows_in_the_file(database_file) < 50 and time.monotonic() < deadline:
            gevent.sleep(0.02)
        assert rows_in_the_file(database_file) == 50
        fill(database, 10)  # written while the checkpoints run: the next one copies them too
        while rows_in_the_file(database_file) < 60 and time.monotonic() < deadline:
            gevent.sleep(0.02)
        assert rows_in_the_file(database_file) == 60
    finally:
        checkpoints.kill()


def test_a_checkpoint_killed_mid_way_closes_its_connection_only_after_the_thread(database_file, monkeypatch):
    """A server's shutdown kills the greenlet while a thread may be checkpointing: the connection must outlive it.

    Closing it under the thread crashed the process (a segfault in sqlite3) or failed the thread's statement."""
    from horde.storage import sqlite_checkpoint

    started, outcome = [], []

    def slow_checkpoint(connection):
        started.append(True)
        time.sleep(0.3)  # in the pool's thread, while the greenlet is killed
        try:
            connection.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
            outcome.append("checkpointed")
        except sqlite3.Error as exc:
            outcome.append(repr(exc))

    monkeypatch.setattr(sqlite_checkpoint, "checkpoint", slow_checkpoint)
    checkpoints = gevent.spawn(run_checkpoints, str(database_file), 0.01)
    deadline = time.monotonic() + CHECKPOINT_WAIT_S
    while not started and time.monotonic() < deadline:
        gevent.sleep(0.01)
    checkpoints.kill()
    while not outcome and time.monotonic() < deadline:
        gevent.sleep(0.02)
    assert outcome == ["checkpointed"]
