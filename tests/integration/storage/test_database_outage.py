"""The database behind a proxy that drops: ServiceUnavailable, one wake-up per outage, reconnection, /ready."""

from __future__ import annotations

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.exc import OperationalError, ProgrammingError

from horde.accounts import service as accounts
from horde.accounts.models import User
from horde.app import create_app, init_schema
from horde.config import Settings
from horde.errors import ServiceUnavailable
from horde.runtime import Runtime
from horde.storage import database
from horde.storage.database import is_busy, is_unavailable
from tests.support.tcp_proxy import proxy_database


@pytest.fixture
def proxied(postgres):
    """A runtime whose database connections go through a proxy the test can cut."""
    if postgres is None:
        pytest.skip("PostgreSQL tests need HORDE_TEST_DATABASE_URL")
    postgres.truncate()
    proxy, proxied_url = proxy_database(postgres.url)
    runtime = Runtime.build(Settings.from_env({}, database_url=proxied_url))
    init_schema(runtime)
    yield runtime, proxy
    runtime.close()
    proxy.close()


def test_a_lost_database_is_service_unavailable_wakes_waiters_once_and_comes_back(proxied):
    runtime, proxy = proxied
    assert runtime.db.ping()
    subscription = runtime.bus.subscribe("request:anything")

    proxy.cut()

    with pytest.raises(ServiceUnavailable) as lost, runtime.db.read() as session:
        session.execute(text("SELECT 1"))
    assert lost.value.status == 503 and lost.value.headers["Retry-After"] == "5"
    assert subscription.wait(0), "every waiter is woken to read, and to meet the outage itself"
    assert not runtime.db.ping()
    assert not subscription.wait(0), "one wake-up per outage, not one per failed read"

    proxy.resume()

    assert runtime.db.ping()
    with runtime.db.transaction() as session:
        accounts.create_user(session, "after-the-outage")
    assert runtime.db.reachable


def test_a_commit_cut_off_may_have_been_stored_and_an_earlier_failure_was_not(proxied):
    runtime, proxy = proxied
    with pytest.raises(ServiceUnavailable) as at_commit, runtime.db.transaction() as session:
        accounts.create_user(session, "maybe-stored")
        session.flush()
        proxy.cut()
    assert at_commit.value.maybe_committed
    proxy.resume()
    with pytest.raises(ServiceUnavailable) as before_commit, runtime.db.transaction() as session:
        proxy.cut()
        accounts.create_user(session, "never-stored")
        session.flush()
    assert not before_commit.value.maybe_committed
    proxy.resume()
    with runtime.db.read() as session:
        assert session.query(User).filter_by(username="never-stored").count() == 0


def test_a_connection_lost_as_a_finished_read_closes_loses_nothing(proxied):
    runtime, proxy = proxied
    with runtime.db.read() as session:
        answer = session.execute(text("SELECT 41 + 1")).scalar()
        proxy.cut()  # the session's rollback on close meets a dead connection
    assert answer == 42
    proxy.resume()
    assert runtime.db.ping()


def test_a_wrong_statement_is_not_an_outage(proxied):
    runtime, _ = proxied
    with pytest.raises(ProgrammingError), runtime.db.read() as session:
        session.execute(text("SELECT * FROM no_such_table"))
    assert runtime.db.reachable


def test_a_locked_sqlite_database_is_busy_not_a_wrong_statement(tmp_path):
    url = f"sqlite:///{tmp_path / 'locked.db'}"
    holder = create_engine(url)
    waiter = create_engine(url, connect_args={"timeout": 0})
    with holder.connect() as held:
        held.exec_driver_sql("CREATE TABLE t (x INTEGER)")
        held.exec_driver_sql("BEGIN IMMEDIATE")
        with pytest.raises(OperationalError) as locked, waiter.connect() as connection:
            connection.exec_driver_sql("BEGIN IMMEDIATE")
        held.exec_driver_sql("ROLLBACK")
    assert is_unavailable(locked.value) and is_busy(locked.value)
    holder.dispose()
    waiter.dispose()


def test_a_transaction_that_cannot_begin_on_a_locked_sqlite_database_is_a_busy_503(tmp_path, monkeypatch):
    monkeypatch.setattr(database, "SQLITE_BUSY_TIMEOUT_MS", 0)
    db = database.Database(f"sqlite:///{tmp_path / 'locked.db'}")
    holder = create_engine(db.url)
    with holder.connect() as held:
        held.exec_driver_sql("BEGIN IMMEDIATE")
        with pytest.raises(ServiceUnavailable) as refused, db.transaction() as session:
            session.connection()
        held.exec_driver_sql("ROLLBACK")
    assert refused.value.message == database.BUSY_MESSAGE
    with db.transaction() as session:  # the lock is gone: the same database begins again
        session.connection()
    holder.dispose()
    db.dispose()


def test_ready_and_the_503_of_both_apis_while_the_database_is_down(proxied):
    runtime, proxy = proxied
    client = create_app(runtime=runtime).test_client()
    ready = client.get("/ready")
    assert ready.status_code == 200
    assert ready.json == {"status": "ready", "database": "ok", "redis": "not configured", "down": []}

    proxy.cut()

    ready = client.get("/ready")
    assert ready.status_code == 503 and ready.headers["Retry-After"] == "5"
    assert ready.json == {
        "status": "unavailable",
        "database": "unreachable",
        "redis": "not configured",
        "down": ["database"],
    }
    assert client.get("/health").status_code == 200
    front = client.get("/v1/models")
    assert front.status_code == 503 and front.headers["Retry-After"] == "5"
    assert front.json["error"]["code"] == "service_unavailable" and front.json["error"]["type"] == "api_error"
    native = client.get("/api/v2/status/models?type=chat")
    assert native.status_code == 503 and native.headers["Retry-After"] == "5"
    assert native.json["rc"] == "service_unavailable" and "database" in native.json["message"]

    proxy.resume()

    assert client.get("/ready").status_code == 200
    assert client.get("/v1/models").status_code == 200
