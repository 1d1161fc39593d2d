"""The production command: gunicorn's gevent worker, two processes, PostgreSQL + Redis.

Also: requirements.txt alone installs everything that command imports (gunicorn's
gevent worker imports `packaging`, which only gunicorn's `gevent` extra brings).
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid

import openai
import pytest

from horde.accounts import service as accounts
from horde.app import init_schema
from horde.config import Settings
from horde.runtime import Runtime
from tests.support.databases import PostgresDatabase, postgres_admin_url, redis_url
from tests.support.distributions import canonical, closure
from tests.support.harness import RULES_PATH, unique_model
from tests.support.processes import ROOT, Gunicorn, Worker, base_env

IMPORTED_BY_GEVENT_WORKER = """
import json, sys
from importlib import metadata
at_start = set(sys.modules)  # the interpreter's own (site hooks of setuptools and the like)
import gunicorn.workers.ggevent, horde.wsgi  # noqa: F401
owners = metadata.packages_distributions()
names = {name.split(".")[0] for name in set(sys.modules) - at_start}
print(json.dumps(sorted({dist for name in names for dist in owners.get(name, ())})))
"""


#: The project itself, and what a dependency imports only when it happens to be installed (flask-restx takes
#: ujson over json when it can): neither is a requirement of the production command.
NOT_REQUIRED = {"horde", "ujson"}


def test_requirements_txt_installs_everything_the_production_command_imports(tmp_path):
    lines = [line.split("#")[0].strip() for line in (ROOT / "requirements.txt").read_text().splitlines()]
    installed = closure([line for line in lines if line])
    probe = subprocess.run(
        [sys.executable, "-c", IMPORTED_BY_GEVENT_WORKER],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=base_env(f"sqlite:///{tmp_path / 'horde.db'}"),
        timeout=120,
    )
    assert probe.returncode == 0, probe.stderr
    imported = {canonical(name) for name in json.loads(probe.stdout)}
    assert "packaging" in imported  # the import that broke the README's command
    assert imported - installed - NOT_REQUIRED == set()


@pytest.fixture(scope="module")
def production():
    admin_url, redis = postgres_admin_url(), redis_url()
    if not admin_url or not redis:
        pytest.skip("the production command needs HORDE_TEST_DATABASE_URL and HORDE_TEST_REDIS_URL")
    database = PostgresDatabase(admin_url)
    runtime = Runtime.build(Settings.from_env({}, database_url=database.url))
    server = None
    try:
        init_schema(runtime)
        env = base_env(database.url, HORDE_REDIS_URL=redis, HORDE_REDIS_PREFIX=f"horde_test_{uuid.uuid4().hex[:12]}")
        server = Gunicorn(env, processes=2)
        yield runtime, server, env
    finally:
        if server is not None:
            server.stop()
        runtime.close()
        database.drop()


def test_gunicorn_gevent_with_two_processes_answers_json_and_streamed_requests(production):
    runtime, server, env = production
    with runtime.db.transaction() as session:
        _, client_key = accounts.create_user(session, f"client-{uuid.uuid4().hex[:8]}", kudos=1000)
        _, owner_key = accounts.create_user(session, f"owner-{uuid.uuid4().hex[:8]}", trusted=True)
    assert len(server.worker_pids()) == 2
    model = unique_model("production")
    worker = Worker(
        server,
        owner_key,
        f"worker-{uuid.uuid4().hex[:8]}",
        [model],
        "--backend",
        "scripted",
        "--rules",
        str(RULES_PATH),
        "--wait",
        "5",
        env=env,
    )
    try:
        client = openai.OpenAI(base_url=server.url + "/v1", api_key=client_key, max_retries=0, timeout=60)
        messages = [{"role": "user", "content": "Hi"}]
        completion = client.chat.completions.create(model=model, messages=messages)
        assert completion.choices[0].message.content == "You wrote: Hi"
        pieces = [
            chunk.choices[0].delta.content or ""
            for chunk in client.chat.completions.create(model=model, messages=messages, stream=True)
            if chunk.choices
        ]
        assert "".join(pieces) == "You wrote: Hi"
    finally:
        worker.stop()
    assert server.alive(), server.output()
    assert "Traceback" not in server.output()
