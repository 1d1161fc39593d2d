"""Fixtures shared by every test: a fresh database on SQLite and, when configured, PostgreSQL."""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path

import pytest
from flask import Flask
from sqlalchemy.engine import make_url

from horde.accounts import service as accounts
from horde.app import app_shape, bind_runtime, create_app, init_schema
from horde.config import Settings
from horde.http.request_context import RUNTIME_EXTENSION
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


#: This test process's apps, one per app_shape: building one per test (werkzeug compiling its rules, flask-restx
#: its docs) was much of a short test's CPU. A test that builds its own (other settings, a second process's
#: runtime) still calls create_app.
_APPS_BY_SHAPE: dict[tuple, Flask] = {}


@pytest.fixture
def app(runtime):
    """The process's app for the runtime's settings, bound to this test's runtime. A test must not change the app
    (its config, its client class...): the next test gets the same one, and the teardown fails when it changed."""
    shape = app_shape(runtime.settings)
    app = _APPS_BY_SHAPE.get(shape)
    if app is None:
        app = _APPS_BY_SHAPE[shape] = create_app(runtime=runtime)
    else:
        bind_runtime(app, runtime)
    before = _changeable_state(app)
    yield app
    try:
        assert _changeable_state(app) == before, "a test changed the shared app: build its own with create_app"
    finally:
        app.extensions.pop(RUNTIME_EXTENSION)  # a request still running after its test fails, not reaching the next


def _changeable_state(app: Flask) -> tuple:
    """What a test could change on an app and the next test would see. (Routes, hooks and handlers added after the
    first request Flask refuses itself.)"""
    hooks = (app.before_request_funcs, app.after_request_funcs, app.teardown_request_funcs)
    return (
        dict(app.config),
        dict(app.extensions),
        app.test_client_class,
        app.testing,
        app.wsgi_app,
        [{name: list(functions) for name, functions in hook.items()} for hook in hooks],
    )


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
