"""A `python -m horde serve` on SQLite checkpoints its write-ahead log itself, off its commits
(horde/storage/sqlite_checkpoint.py): what it writes reaches the database file within seconds, long before the log
holds the pages at which a commit would copy it."""

from __future__ import annotations

import sqlite3
import uuid

import pytest

from horde.app import init_schema
from horde.config import Settings
from horde.runtime import Runtime
from tests.support.harness import Harness, unique_model
from tests.support.processes import wait_until

pytestmark = pytest.mark.e2e
IN_THE_FILE_WITHIN_S = 20


def workers_in_the_file(path, name: str) -> int:
    """Workers named `name` in the database file itself (`immutable=1` never reads the log)."""
    connection = sqlite3.connect(f"file:{path}?immutable=1", uri=True)
    try:
        return connection.execute("SELECT count(*) FROM workers WHERE name = ?", (name,)).fetchone()[0]
    finally:
        connection.close()


def test_what_a_server_writes_reaches_the_database_file(tmp_path):
    path = tmp_path / "horde.db"
    url = f"sqlite:///{path}"
    schema = Runtime.build(Settings.from_env({}, database_url=url))
    init_schema(schema)
    schema.close()
    connection = sqlite3.connect(path, isolation_level=None)
    connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # the schema in the file, the log empty
    connection.close()
    harness = Harness(url)
    try:
        name = f"checkpointed-{uuid.uuid4().hex[:8]}"
        harness.worker([unique_model()], name=name)  # its first pop writes its row: a few pages of log
        assert wait_until(lambda: workers_in_the_file(path, name), IN_THE_FILE_WITHIN_S, "the worker's row in the file")
    finally:
        harness.close()
