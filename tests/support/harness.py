"""The end-to-end harness: a real `python -m horde serve` (one or several), real workers, the real OpenAI SDK.

tests/e2e/conftest.py makes it a fixture (`horde`); tests that need their own (several servers, Redis)
build one from here.
"""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import openai
import pytest

from horde.accounts import service as accounts
from horde.app import init_schema
from horde.config import Settings
from horde.runtime import Runtime
from tests.support.databases import PostgresDatabase, postgres_admin_url, redis_url
from tests.support.ledger import assert_balances_match_ledger
from tests.support.processes import Server, Worker, base_env

RULES_PATH = Path(__file__).resolve().parents[1] / "e2e" / "rules.json"
E2E_SETTINGS = {
    "HORDE_OAI_NO_WORKER_GRACE_S": 2,
    "HORDE_OAI_KEEPALIVE_S": 1,
    "HORDE_OAI_DROP_GRACE_S": 1,
    "HORDE_SWEEP_INTERVAL_S": 0.5,
    "HORDE_IMAGE_FETCH_ALLOW": "127.0.0.1",
}
#: For servers of several processes on one database without Redis (two `horde serve`, a gunicorn of two): while
#: they share it, each reads the database this often to hear what the others changed (the default, 1 s, would
#: make the tests that wait for it slower).
SHARED_DATABASE_SETTINGS = {"HORDE_EVENTS_POLL_S": 0.2}


class Harness:
    def __init__(
        self, database_url: str, settings: dict | None = None, servers: int = 1, server_database_url: str | None = None
    ):
        """`server_database_url`: where the servers reach the database (a proxy), if not where the test does.
        `servers=0`: the test starts its own (gunicorn) and appends it to `servers`; `server` and `url` stay None."""
        self.database_url = database_url
        self.runtime = Runtime.build(Settings.from_env({}, database_url=database_url))
        init_schema(self.runtime)
        self.env = base_env(server_database_url or database_url, **{**E2E_SETTINGS, **(settings or {})})
        self.servers = [Server(self.env) for _ in range(servers)]
        self.server = self.servers[0] if self.servers else None
        self.url = self.server.url if self.server else None
        self.workers: list[Worker] = []

    def user(self, kudos: int = 0, trusted: bool = False) -> str:
        with self.runtime.db.transaction() as session:
            _, key = accounts.create_user(session, f"user-{uuid.uuid4().hex[:8]}", kudos=kudos, trusted=trusted)
        return key

    def worker(self, models, *extra, key=None, rules=RULES_PATH, name=None, server=None) -> Worker:
        key = key or self.user(trusted=True)
        name = name or f"worker-{uuid.uuid4().hex[:8]}"
        args = ["--backend", "scripted", "--wait", "5", *extra]
        if rules and "--backend-url" not in extra:
            args += ["--rules", str(rules)]
        worker = Worker(server or self.server, key, name, list(models), *args, env=self.env)
        self.workers.append(worker)
        return worker

    def openai(self, key: str | None = None, server=None, **options) -> openai.OpenAI:
        options.setdefault("max_retries", 0)
        return openai.OpenAI(base_url=(server or self.server).url + "/v1", api_key=key or "0000000000", **options)

    def async_openai(self, key: str | None = None, **options) -> openai.AsyncOpenAI:
        options.setdefault("max_retries", 0)
        return openai.AsyncOpenAI(base_url=self.url + "/v1", api_key=key or "0000000000", **options)

    def stop_workers(self) -> None:
        while self.workers:
            self.workers.pop().stop()

    def close(self) -> None:
        self.stop_workers()
        for server in self.servers:
            server.stop()
        try:
            assert_balances_match_ledger(self.runtime.db)  # the standing invariant over the servers' database
        finally:
            self.runtime.close()


@contextlib.contextmanager
def postgres_servers(settings: dict | None = None, servers: int = 2) -> Iterator[Harness]:
    """Several server processes on a fresh PostgreSQL database (with Redis between them when configured), for
    races run for real; skips without HORDE_TEST_DATABASE_URL."""
    admin_url = postgres_admin_url()
    if not admin_url:
        pytest.skip("races run on PostgreSQL with two server processes: they need HORDE_TEST_DATABASE_URL")
    database = PostgresDatabase(admin_url)
    if redis_url():
        settings = {"HORDE_REDIS_URL": redis_url(), "HORDE_REDIS_PREFIX": f"horde_test_{uuid.uuid4().hex[:12]}"} | (
            settings or {}
        )
    harness = Harness(database.url, settings, servers=servers)
    try:
        yield harness
    finally:
        harness.close()
        database.drop()


def unique_model(prefix: str = "e2e") -> str:
    return f"{prefix}/model-{uuid.uuid4().hex[:8]}"


def write_rules(tmp_path: Path, rules: list[dict]) -> Path:
    """A scripted worker's rules file holding `rules`."""
    path = tmp_path / "rules.json"
    path.write_text(json.dumps({"rules": rules}))
    return path
