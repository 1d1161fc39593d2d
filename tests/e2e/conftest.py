"""End-to-end fixtures: a harness (tests/support/harness.py) per test process and database; its workers stop
after each test."""

from __future__ import annotations

import uuid

import pytest

from tests.support.databases import PostgresDatabase, postgres_admin_url, redis_url
from tests.support.harness import Harness

BACKENDS = ["sqlite", "postgresql"]


def _database_url(backend: str, tmp_path_factory):
    """A fresh database on `backend`, removed afterwards; skips PostgreSQL without HORDE_TEST_DATABASE_URL."""
    if backend == "sqlite":
        yield f"sqlite:///{tmp_path_factory.mktemp('e2e') / 'horde.db'}"
        return
    admin_url = postgres_admin_url()
    if not admin_url:
        pytest.skip("PostgreSQL tests need HORDE_TEST_DATABASE_URL")
    database = PostgresDatabase(admin_url)
    yield database.url
    database.drop()


@pytest.fixture(scope="module", params=BACKENDS)
def e2e_database_url(request, tmp_path_factory):
    """A database of the module's own, for the servers a test starts itself (several, other settings)."""
    yield from _database_url(request.param, tmp_path_factory)


@pytest.fixture(scope="session", params=BACKENDS)
def _horde_database_url(request, tmp_path_factory):
    yield from _database_url(request.param, tmp_path_factory)


@pytest.fixture(scope="session")
def horde(_horde_database_url):
    """One server per test process and database, shared by every module that asks: a server's start is most of a
    short test's CPU. Its tests use models and users of their own (unique_model, harness.user)."""
    harness = Harness(_horde_database_url)
    yield harness
    harness.close()


@pytest.fixture(autouse=True)
def _stop_test_workers(request):
    yield
    if "horde" in request.fixturenames:
        request.getfixturevalue("horde").stop_workers()


@pytest.fixture
def redis_settings():
    url = redis_url()
    if not url:
        pytest.skip("Redis tests need HORDE_TEST_REDIS_URL")
    return {"HORDE_REDIS_URL": url, "HORDE_REDIS_PREFIX": f"horde_test_{uuid.uuid4().hex[:12]}"}


#: One inference thread: on two cores the Horde, its worker and the test need the other.
LLAMA_THREADS = ("-t", "1")


@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    """A real llama-server on the generated tiny model, one per module that asks (those run with HORDE_TEST_LLAMA=1)."""
    from tests.support.llama_backend import LlamaServer, build_llama_server, write_tiny_model

    binary = build_llama_server()
    model_path = write_tiny_model(tmp_path_factory.mktemp("llama") / "tiny.gguf")
    with LlamaServer(binary, model_path, extra_args=LLAMA_THREADS) as server:
        yield server
