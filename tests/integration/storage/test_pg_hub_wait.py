"""PostgreSQL connections wait for their socket on gevent's hub: other greenlets run meanwhile, a connection
keeps one watcher per direction for its life, and a connection the server drops fails its statement. A bounded
wait (psycopg's `timeout`, which `notifies` passes) ends at its deadline, in a process under gevent's patching
as in one without."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
import threading
import time

import gevent
import psycopg
import pytest

from horde.storage import database, pg_engines, pg_hub_wait
from horde.storage.pg_hub_wait import HubWaitConnection


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
    monkeypatch.setattr(pg_engines, "waits_on_the_hub", lambda: True)
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


def test_wait_takes_the_parameters_of_the_installed_psycopgs_wait():
    """psycopg calls `wait` with the parameters of its own signature (`timeout` since 3.3.6): an override that
    lacked one would fail, or ignore a bound, in psycopg's own calls."""
    ours = inspect.signature(HubWaitConnection.wait).parameters
    theirs = inspect.signature(psycopg.Connection.wait).parameters
    assert [(name, parameter.default) for name, parameter in ours.items()] == [
        (name, parameter.default) for name, parameter in theirs.items()
    ]


def test_a_bounded_wait_ends_at_its_deadline_and_hears_what_comes_before_it(url, connection):
    connection.execute("LISTEN hub_wait_probe")
    started = time.monotonic()
    with gevent.Timeout(10, AssertionError("notifies(timeout=0.2) outlived its deadline")):
        assert list(connection.notifies(timeout=0.2)) == []
    assert 0.2 <= time.monotonic() - started < 5
    with psycopg.connect(url, autocommit=True) as other:
        other.execute("NOTIFY hub_wait_probe, 'hello'")
    with gevent.Timeout(10, AssertionError("the notification never came")):
        heard = list(connection.notifies(timeout=5, stop_after=1))
    assert [(notice.channel, notice.payload) for notice in heard] == [("hub_wait_probe", "hello")]
    assert connection.execute("SELECT 1").fetchone() == (1,)  # the hub's waits go on after a bounded one


#: A process patched as the server's are: a bounded wait lets the other greenlets run, ends at its deadline, and
#: hears a notification sent while it waits.
PATCHED_BOUNDED_WAIT = """
from gevent import monkey
monkey.patch_all()
import json, sys, time
import gevent, psycopg
from horde.storage.pg_hub_wait import HubWaitConnection, waits_on_the_hub

url = sys.argv[1]
connection = HubWaitConnection.connect(url, autocommit=True)
connection.execute("LISTEN hub_wait_patched")
ticks = []

def tick():
    while True:
        ticks.append(1)
        gevent.sleep(0.01)

def notify_later():
    gevent.sleep(0.2)
    with psycopg.connect(url, autocommit=True) as other:
        other.execute("NOTIFY hub_wait_patched, 'later'")

ticker = gevent.spawn(tick)
started = time.monotonic()
empty = list(connection.notifies(timeout=0.3))
waited_s, ticks_while_waiting = time.monotonic() - started, len(ticks)
gevent.spawn(notify_later)
started = time.monotonic()
heard = [notice.payload for notice in connection.notifies(timeout=10, stop_after=1)]
print(json.dumps({"on_hub": waits_on_the_hub(), "empty": empty, "waited_s": waited_s, "ticks": ticks_while_waiting,
                  "heard": heard, "heard_after_s": time.monotonic() - started}))
"""


def test_a_bounded_wait_under_gevents_patching_lets_other_greenlets_run(url):
    probe = subprocess.run(
        [sys.executable, "-c", PATCHED_BOUNDED_WAIT, url], capture_output=True, text=True, timeout=60
    )
    assert probe.returncode == 0, probe.stderr
    seen = json.loads(probe.stdout)
    assert (seen["on_hub"], seen["empty"], seen["heard"]) == (True, [], ["later"])
    assert 0.3 <= seen["waited_s"] < 5 and seen["ticks"] >= 10  # 0.3 s of 10 ms ticks went on meanwhile
    assert seen["heard_after_s"] < 5  # woken by the notification, not by the deadline
