"""Fixtures shared by every test: a fresh database on SQLite and, when configured, PostgreSQL."""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

from horde.accounts import service as accounts
from horde.app import create_app, init_schema
from horde.config import Settings
from horde.runtime import Runtime
from tests.support.databases import PostgresDatabase, postgres_admin_url
from tests.support.ledger import assert_balances_match_ledger

BACKENDS = ["sqlite", "postgresql"]


@pytest.fixture(scope="session")
def postgres():
    admin_url = postgres_admin_url()
    if not admin_url:
        yield None
        return
    database = PostgresDatabase(admin_url)
    yield database
    database.drop()


@pytest.fixture(params=BACKENDS)
def database_url(request, tmp_path, postgres):
    if request.param == "postgresql":
        if postgres is None:
            pytest.skip("PostgreSQL tests need HORDE_TEST_DATABASE_URL")
        postgres.truncate()
        return postgres.url
    return f"sqlite:///{tmp_path / 'horde.db'}"


@pytest.fixture
def postgresql_runtime(runtime):
    """The runtime, for tests of what only PostgreSQL has (server sessions, their pools and plans): skipped on
    SQLite. A test module may define its own, to say why in its skip."""
    if not runtime.db.is_postgresql:
        pytest.skip("a PostgreSQL server's sessions: SQLite has none")
    return runtime


@pytest.fixture
def sqlite_runtime(runtime):
    """The runtime, for tests of what only SQLite does (its driver's statement cache): skipped on PostgreSQL."""
    if not runtime.db.is_sqlite:
        pytest.skip("SQLite's own driver: PostgreSQL has other sessions")
    return runtime


@pytest.fixture
def redis_prefix():
    return f"horde_test_{uuid.uuid4().hex[:12]}"


@pytest.fixture
def settings(database_url):
    # Conversation affinity off: these tests send the same short prompts from one user to whichever worker pops,
    # which affinity would hold for the worker of the first (tests/integration/chat/test_affinity.py turns it on).
    return Settings.from_env({}, database_url=database_url, image_fetch_allow=("127.0.0.1",), affinity_wait_ms=0)


@pytest.fixture(scope="session")
def sqlite_schema(tmp_path_factory):
    """An SQLite file with what `init_schema` makes, made once per test process: a test's SQLite database starts
    as a copy of it instead of creating every table again (most of a short test's setup)."""
    path = tmp_path_factory.mktemp("schema") / "horde.db"
    hub = Runtime.build(Settings.from_env({}, database_url=f"sqlite:///{path}"))
    try:
        init_schema(hub)
    finally:
        hub.close()
    return path


def _start_from_schema(database_url: str, schema: Path) -> None:
    """Copy the made schema to the SQLite file `database_url` names, when that file does not exist yet."""
    url = make_url(database_url)
    if url.get_backend_name() == "sqlite" and url.database not in (None, "", ":memory:"):
        target = Path(url.database)
        if not target.exists():
            shutil.copyfile(schema, target)


@pytest.fixture
def runtime(settings, sqlite_schema):
    _start_from_schema(settings.database_url, sqlite_schema)
    hub = Runtime.build(settings)
    init_schema(hub)  # as a server's start does: on a copy of the schema it finds every table there
    yield hub
    try:
        assert_balances_match_ledger(hub.db)  # the standing invariant, after every test that had a database
    finally:
        hub.close()


@pytest.fixture
def app(runtime):
    return create_app(runtime=runtime)


@pytest.fixture
def client(app):
    return app.test_client()


@pytest.fixture
def make_user(runtime):
    def make(name=None, kudos=0, trusted=False):
        with runtime.db.transaction() as session:
            user, key = accounts.create_user(
                session, name or f"user-{uuid.uuid4().hex[:8]}", kudos=kudos, trusted=trusted
            )
        return user, key

    return make
