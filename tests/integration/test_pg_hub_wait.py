"""PostgreSQL connections wait for their socket on gevent's hub: other greenlets run meanwhile, a connection
keeps one watcher per direction for its life, and a connection the server drops fails its statement."""

from __future__ import annotations

import threading

import gevent
import psycopg
import pytest

from horde import database, pg_hub_wait
from horde.pg_hub_wait import HubWaitConnection


@pytest.fixture
def url(runtime):
    if not runtime.db.is_postgresql:
        pytest.skip("the waits are psycopg's")
    return runtime.db.engine.url.render_as_string(hide_password=False).replace("postgresql+psycopg://", "postgresql://")


@pytest.fixture
def connection(url):
    connection = HubWaitConnection.connect(url, autocommit=True)
    yield connection
    connection.close()


def test_other_greenlets_run_while_a_statement_waits(connection):
    ticks = []

    def tick():
        for _ in range(20):
            ticks.append(1)
            gevent.sleep(0.005)

    ticker = gevent.spawn(tick)
    connection.execute("SELECT pg_sleep(0.2)")
    ticker.join()
    assert len(ticks) == 20  # all of them ran during the 0.2 s the statement waited


def test_a_connection_keeps_its_watchers_for_its_life_and_closes_them_with_itself(connection):
    used = set()
    for value in range(50):
        assert connection.execute("SELECT %s::int", [value]).fetchone() == (value,)
        used.update(map(id, connection._watchers.values()))
    assert 1 <= len(used) <= 3  # read, write, both: not two new watchers per statement
    watchers = list(connection._watchers.values())
    connection.close()
    assert connection._watchers is None and not any(watcher.active for watcher in watchers)


def test_a_connection_the_server_ends_fails_its_statement(url, connection):
    pid = connection.info.backend_pid
    waiting = gevent.spawn(connection.execute, "SELECT pg_sleep(30)")
    gevent.sleep(0.1)
    with psycopg.connect(url, autocommit=True) as other:
        other.execute("SELECT pg_terminate_backend(%s)", [pid])
    with gevent.Timeout(10):
        waiting.join()
    assert isinstance(waiting.exception, psycopg.OperationalError)


def test_the_engines_connect_waiting_on_the_hub_under_gevents_patching(runtime, monkeypatch):
    if not runtime.db.is_postgresql:
        pytest.skip("the waits are psycopg's")
    with runtime.db.read() as session:  # this test process is not patched: psycopg's own connection
        assert not isinstance(session.connection().connection.dbapi_connection, HubWaitConnection)
    monkeypatch.setattr(pg_hub_wait, "waits_on_the_hub", lambda: True)
    monkeypatch.setattr(database, "waits_on_the_hub", lambda: True)
    patched = database.Database(runtime.db.url)
    try:
        for sessions in (patched.transaction, patched.read, patched.autocommit):
            with sessions() as session:
                raw = session.connection().connection.dbapi_connection
                assert isinstance(raw, HubWaitConnection)
                assert session.connection().exec_driver_sql("SELECT 1").scalar() == 1
    finally:
        patched.dispose()


def test_a_connection_used_from_another_os_thread_waits_on_that_threads_hub(connection):
    assert connection.execute("SELECT 1").fetchone() == (1,)  # watchers made on this thread's hub
    answers = []
    other = threading.Thread(target=lambda: answers.append(connection.execute("SELECT 2").fetchone()), daemon=True)
    other.start()
    other.join(timeout=10)
    assert answers == [(2,)]  # a watcher of this thread's loop, which nobody runs there, would never wake it
