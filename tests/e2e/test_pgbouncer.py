"""The production command behind Debian's pgbouncer in transaction mode, as docs/how-to/production.md configures it.

gunicorn with the Horde's worker class, two processes, Redis between them, reaches PostgreSQL through pgbouncer
(`pool_mode = transaction`: a server connection is another client's after each transaction) with
HORDE_DATABASE_POOLER=transaction. Real workers (`python -m horde worker`, scripted) and OpenAI SDK clients load it,
some streamed, while one of gunicorn's processes is killed with SIGKILL: the SDK's retries (with their
Idempotency-Key) join the requests they had sent, the master forks a new process, and afterwards every request
has finished, none was charged twice, every balance equals its ledger, and no call was answered 5xx (the request
log of every process says so; before the setting, psycopg's prepared statements met other clients' server
connections: `prepared statement "_pg3_0" already exists`). The test installs nothing: it skips where pgbouncer
is not installed (CI installs Debian's in .ci/run).
"""

from __future__ import annotations

import os
import re
import signal
import threading
import uuid

import openai
import psycopg
import pytest
from sqlalchemy import func, select

from horde.accounts import service as accounts
from horde.accounts.models import KudosEntry
from horde.app import init_schema
from horde.chat.models import FINAL_STATES, ChatRequest
from horde.config import Settings
from horde.runtime import Runtime
from tests.support.databases import PostgresDatabase, postgres_admin_url, redis_url
from tests.support.harness import E2E_SETTINGS, RULES_PATH, unique_model
from tests.support.ledger import assert_balances_match_ledger
from tests.support.pgbouncer import PGBOUNCER, PgBouncer
from tests.support.processes import Gunicorn, Worker, base_env, wait_until

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(PGBOUNCER is None, reason="pgbouncer is not installed (CI installs Debian's in .ci/run)"),
]
HORDE_WORKER_CLASS = "horde.gunicorn_worker.HordeWorker"
CLIENTS = 8
REQUESTS_PER_CLIENT = 12
#: The machine's PostgreSQL serves the other tests too: fewer server connections than the documented 40.
POOL = {"default_pool_size": "20", "reserve_pool_size": "0"}
SERVER_ERROR = re.compile(r" status=5\d\d ")
#: The walking pool's settings, which its transactions set LOCAL behind the pooler (horde/storage/pg_engines.py).
SETTINGS = ("enable_sort", "plan_cache_mode", "synchronous_commit")


@pytest.fixture(scope="module")
def production(tmp_path_factory):
    admin_url, redis = postgres_admin_url(), redis_url()
    if not admin_url or not redis:
        pytest.skip("the production command needs HORDE_TEST_DATABASE_URL and HORDE_TEST_REDIS_URL")
    database = PostgresDatabase(admin_url, prefix="horde_pgbouncer")
    runtime = Runtime.build(Settings.from_env({}, database_url=database.url))
    bouncer = server = None
    try:
        init_schema(runtime)
        bouncer = PgBouncer(admin_url, extra=POOL)
        env = base_env(
            bouncer.url_for(database.url),
            **E2E_SETTINGS,
            HORDE_DATABASE_POOLER="transaction",
            HORDE_REDIS_URL=redis,
            HORDE_REDIS_PREFIX=f"horde_test_{uuid.uuid4().hex[:12]}",
        )
        server = Gunicorn(env, processes=2, worker_class=HORDE_WORKER_CLASS)
        yield runtime, server, env, bouncer
    finally:
        if server is not None:
            server.stop()
        if bouncer is not None:
            bouncer.stop()
        runtime.close()
        database.drop()


def _client_loop(base_url: str, key: str, model: str, index: int, outcomes: list, errors: list) -> None:
    client = openai.OpenAI(base_url=base_url, api_key=key, max_retries=5, timeout=60)
    for turn in range(REQUESTS_PER_CLIENT):
        content = f"client {index} turn {turn}"
        try:
            if (index + turn) % 2:
                pieces = client.chat.completions.create(
                    model=model, messages=[{"role": "user", "content": content}], stream=True
                )
                text = "".join(chunk.choices[0].delta.content or "" for chunk in pieces if chunk.choices)
            else:
                reply = client.chat.completions.create(model=model, messages=[{"role": "user", "content": content}])
                text = reply.choices[0].message.content
            outcomes.append(text == f"You wrote: {content}")
        except openai.APIError as error:  # a stream cut by the kill is not retried by the SDK
            errors.append(error)


def test_the_production_command_behind_pgbouncer_loses_nothing_when_a_process_is_killed(production):
    runtime, server, env, bouncer = production
    model = unique_model("pgbouncer")
    with runtime.db.transaction() as session:
        keys = [accounts.create_user(session, f"client-{uuid.uuid4().hex[:8]}", kudos=10_000)[1] for _ in range(3)]
        owner_key = accounts.create_user(session, f"owner-{uuid.uuid4().hex[:8]}", trusted=True)[1]
    rules = ("--backend", "scripted", "--rules", str(RULES_PATH), "--wait", "2", "--threads", "4")
    workers: list[Worker] = []
    outcomes: list[bool] = []
    errors: list[Exception] = []
    clients = [
        threading.Thread(
            target=_client_loop, args=(server.url + "/v1", keys[index % 3], model, index, outcomes, errors)
        )
        for index in range(CLIENTS)
    ]
    try:
        for _ in range(2):
            workers.append(Worker(server, owner_key, f"bouncer-{uuid.uuid4().hex[:8]}", [model], *rules, env=env))
        for thread in clients:
            thread.start()
        wait_until(lambda: len(outcomes) >= CLIENTS * REQUESTS_PER_CLIENT // 4, timeout_s=120, what="a quarter done")
        killed = server.worker_pids()[0]
        os.kill(killed, signal.SIGKILL)
        wait_until(lambda: killed not in server.worker_pids() and len(server.worker_pids()) == 2, what="a new process")
        for thread in clients:
            thread.join(300)
        assert not any(thread.is_alive() for thread in clients)
    finally:
        for worker in workers:
            worker.stop()

    # A streamed answer cut by the kill is the one thing a client sees fail (the SDK does not retry a stream it
    # began to read); every other call succeeded, with the right text.
    assert all(outcomes) and len(outcomes) + len(errors) == CLIENTS * REQUESTS_PER_CLIENT
    assert all(isinstance(error, openai.APIConnectionError) for error in errors), errors
    assert len(errors) <= CLIENTS
    wait_until(lambda: _unfinished(runtime) == 0, timeout_s=60, what="every request to finish")
    with runtime.db.read() as session:
        charged_twice = session.execute(
            select(KudosEntry.request_id)
            .where(KudosEntry.kind == "charge")
            .group_by(KudosEntry.request_id)
            .having(func.count() > 1)
        ).all()
    assert charged_twice == []
    assert_balances_match_ledger(runtime.db)
    log = server.output()
    assert not SERVER_ERROR.search(log), [line for line in log.splitlines() if SERVER_ERROR.search(line)][:5]
    assert "prepared statement" not in log and "unsupported startup parameter" not in log
    assert "Traceback" not in log
    assert _settings_through(bouncer, runtime.db.url) == {("on", "auto", "on")}  # nothing outlived a transaction


def _settings_through(bouncer: PgBouncer, database_url: str) -> set[tuple]:
    """What the pooled server connections' sessions have of the walking pool's settings, read by a client of the
    pooler's own, one transaction at a time (each may get another server connection)."""
    with psycopg.connect(bouncer.url_for(database_url), autocommit=True, prepare_threshold=None) as connection:
        return {
            tuple(
                connection.execute("SELECT " + ", ".join(f"current_setting('{name}')" for name in SETTINGS)).fetchone()
            )
            for _ in range(3 * int(POOL["default_pool_size"]))
        }


def _unfinished(runtime) -> int:
    with runtime.db.read() as session:
        return session.scalar(select(func.count()).where(ChatRequest.state.not_in(FINAL_STATES))) or 0
