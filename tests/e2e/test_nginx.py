"""The production command behind Debian's nginx, configured as docs/how-to/production.md says.

nginx runs the documented configuration as it stands, but for its address, its upstream's, and what a test
needs of its own (a temporary folder for its pid, logs and bodies, `daemon off`, the current user), in front
of gunicorn with HordeWorker, two processes, on PostgreSQL + Redis when configured, else SQLite. Through it:
the OpenAI SDK, streamed and not; a worker's long-poll; the client address the anonymous rate limit counts
(with one trusted hop, and without); and the smuggling cases of issue 38 on a raw socket. The test installs
nothing: it skips when `nginx` is not on the PATH (CI installs Debian's in .ci/run).
"""

from __future__ import annotations

import getpass
import http.client
import json
import os
import re
import shutil
import subprocess
import time
import uuid
from pathlib import Path

import pytest
import requests

from tests.support.databases import PostgresDatabase, postgres_admin_url, redis_url
from tests.support.harness import Harness, unique_model
from tests.support.processes import ROOT, GunicornServer, free_port, wait_until
from tests.support.smuggling import PATIENCE_S, SMUGGLES, exchange, ran, smuggle, statuses

NGINX = shutil.which("nginx") or next((path for path in ("/usr/sbin/nginx",) if os.access(path, os.X_OK)), None)
pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(NGINX is None, reason="nginx is not installed (CI installs Debian's nginx in .ci/run)"),
]
PRODUCTION_DOC = ROOT / "docs" / "how-to" / "production.md"
DOCUMENTED_LISTEN = "listen 80;"
DOCUMENTED_UPSTREAM = "server 127.0.0.1:7001;"
RATE_LIMIT_PER_MINUTE = 3


def documented_config() -> str:
    blocks = re.findall(r"```nginx\n(.*?)```", PRODUCTION_DOC.read_text(), re.S)
    assert len(blocks) == 1, "production.md holds one nginx configuration"
    return blocks[0]


class Nginx:
    """Debian's nginx running the documented configuration in front of `upstream_port`."""

    def __init__(self, upstream_port: int, folder: Path):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.folder = folder
        config = documented_config()
        assert DOCUMENTED_LISTEN in config and DOCUMENTED_UPSTREAM in config
        config = config.replace(DOCUMENTED_LISTEN, f"listen 127.0.0.1:{self.port};")
        config = config.replace(DOCUMENTED_UPSTREAM, f"server 127.0.0.1:{upstream_port};")
        own = ["daemon off;", f"pid {folder}/nginx.pid;", f"error_log {folder}/error.log info;"]
        if os.geteuid() == 0:  # its workers would run as nobody, who cannot write this folder
            own.append(f"user {getpass.getuser()};")
        paths = [f"access_log {folder}/access.log;"] + [
            f"{kind}_temp_path {folder}/{kind};" for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
        ]
        config = "\n".join(own) + "\n" + config.replace("http {", "http {\n    " + "\n    ".join(paths), 1)
        (folder / "nginx.conf").write_text(config)
        self.process = subprocess.Popen(
            [NGINX, "-p", str(folder), "-c", str(folder / "nginx.conf"), "-e", str(folder / "error.log")],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.STDOUT,
        )
        wait_until(self._answers, what="nginx to pass /health on")

    def _answers(self) -> bool:
        if self.process.poll() is not None:
            raise RuntimeError("nginx exited:\n" + (self.folder / "error.log").read_text())
        try:
            return requests.get(self.url + "/health", timeout=1).status_code == 200
        except requests.RequestException:
            return False

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(15)


class OneProcess(GunicornServer):
    WORKERS = 1


class Proxied:
    """gunicorn (HordeWorker) with nginx in front, on a harness's database: two processes with Redis between them,
    else one."""

    def __init__(self, harness: Harness, folder: Path, **settings):
        self.harness = harness
        env = dict(harness.env, **{key: str(value) for key, value in settings.items()})
        self.gunicorn = GunicornServer(env) if "HORDE_REDIS_URL" in env else OneProcess(env)
        harness.servers.append(self.gunicorn)
        folder.mkdir()
        self.nginx = Nginx(self.gunicorn.port, folder)
        self.url = self.nginx.url
        self.port = self.nginx.port

    def output(self) -> str:
        """The Horde's log (gunicorn's processes): what ran behind nginx."""
        return self.gunicorn.output()


@pytest.fixture(scope="module")
def harness(tmp_path_factory):
    admin_url = postgres_admin_url()
    database = PostgresDatabase(admin_url) if admin_url else None
    url = database.url if database else f"sqlite:///{tmp_path_factory.mktemp('nginx') / 'horde.db'}"
    settings = {"HORDE_RATE_LIMIT_PER_MINUTE": RATE_LIMIT_PER_MINUTE}
    if database and redis_url():
        settings |= {"HORDE_REDIS_URL": redis_url(), "HORDE_REDIS_PREFIX": f"horde_test_{uuid.uuid4().hex[:12]}"}
    harness = Harness(url, settings)
    yield harness
    harness.close()
    if database:
        database.drop()


@pytest.fixture(scope="module")
def proxied(harness, tmp_path_factory):
    """The production command with one trusted proxy hop, behind nginx."""
    proxied = Proxied(harness, tmp_path_factory.mktemp("proxied") / "nginx", HORDE_TRUSTED_PROXY_HOPS=1)
    yield proxied
    proxied.nginx.stop()


def test_the_openai_sdk_streamed_and_not_through_nginx(harness, proxied):
    """The worker pops through nginx too: its long-polls and submits pass the same proxy."""
    model = unique_model("nginx")
    harness.worker([model], server=proxied)
    client = harness.openai(harness.user(kudos=100), server=proxied, timeout=PATIENCE_S)
    reply = client.chat.completions.create(model=model, messages=[{"role": "user", "content": "plain"}])
    assert reply.choices[0].message.content == "You wrote: plain"
    stream = client.chat.completions.create(
        model=model, messages=[{"role": "user", "content": "slow please"}], stream=True
    )
    arrivals = [(time.monotonic(), chunk) for chunk in stream]
    text = "".join(chunk.choices[0].delta.content or "" for _, chunk in arrivals if chunk.choices)
    assert text == "A slow answer, in steps."
    # The worker takes 4 steps of 0.3 s: unbuffered, the first events reach the client well before the last.
    assert arrivals[-1][0] - arrivals[0][0] >= 0.6


def test_a_worker_s_long_poll_is_held_through_nginx(harness, proxied):
    key = harness.user(trusted=True)
    body = {"name": f"poller-{uuid.uuid4().hex[:6]}", "models": [unique_model()], "max_length": 64}
    body |= {"max_context_length": 512, "wait": 3}
    with requests.Session() as session:
        started = time.monotonic()
        popped = session.post(
            proxied.url + "/api/v2/generate/chat/pop", json=body, headers={"apikey": key}, timeout=PATIENCE_S
        )
        assert popped.status_code == 200 and popped.json()["id"] is None
        assert time.monotonic() - started >= 2.5  # held for its wait, not answered at once
        assert session.get(proxied.url + "/health", timeout=PATIENCE_S).status_code == 200


def anonymous_request(proxied, source: str, forwarded: str | None = None) -> tuple[int, dict]:
    """An anonymous native chat request sent from `source` (an address of the loopback network)."""
    connection = http.client.HTTPConnection("127.0.0.1", proxied.port, timeout=PATIENCE_S, source_address=(source, 0))
    headers = {"Content-Type": "application/json"}
    if forwarded:
        headers["X-Forwarded-For"] = forwarded
    body = json.dumps({"model": proxied.model, "messages": [{"role": "user", "content": "Hello"}]})
    try:
        connection.request("POST", "/api/v2/generate/chat/async", body, headers)
        answer = connection.getresponse()
        return answer.status, json.loads(answer.read())
    finally:
        connection.close()


def serve_model(proxied) -> None:
    proxied.model = unique_model("nginx-rate")
    body = {"name": f"rate-{uuid.uuid4().hex[:6]}", "models": [proxied.model], "max_length": 64, "threads": 50}
    body |= {"max_context_length": 512, "wait": 0}
    key = proxied.harness.user(trusted=True)
    pop = requests.post(
        proxied.url + "/api/v2/generate/chat/pop", json=body, headers={"apikey": key}, timeout=PATIENCE_S
    )
    assert pop.ok, pop.text


def test_one_trusted_hop_counts_the_address_nginx_saw(proxied):
    """127.0.0.2 uses its anonymous allowance, naming another address in X-Forwarded-For does not renew it,
    and 127.0.0.3 still has its own."""
    serve_model(proxied)
    assert [anonymous_request(proxied, "127.0.0.2")[0] for _ in range(RATE_LIMIT_PER_MINUTE)] == [202] * 3
    status, answer = anonymous_request(proxied, "127.0.0.2", forwarded="198.51.100.7")
    assert (status, answer["rc"]) == (429, "rate_limit_exceeded")
    assert anonymous_request(proxied, "127.0.0.3")[0] == 202


def test_without_a_trusted_hop_every_client_is_nginx(harness, tmp_path):
    """HORDE_TRUSTED_PROXY_HOPS=0 behind a proxy: every call comes from nginx's address, one allowance for all."""
    unproxied = Proxied(harness, tmp_path / "nginx", HORDE_TRUSTED_PROXY_HOPS=0)
    try:
        serve_model(unproxied)
        assert [anonymous_request(unproxied, "127.0.0.4")[0] for _ in range(RATE_LIMIT_PER_MINUTE)] == [202] * 3
        assert anonymous_request(unproxied, "127.0.0.5")[0] == 429
    finally:
        unproxied.nginx.stop()
        unproxied.gunicorn.stop()


@pytest.mark.parametrize("case", list(SMUGGLES))
def test_a_smuggled_request_through_nginx_is_answered_once_and_never_runs(proxied, case):
    """nginx refuses most of these itself; whatever it passes on, the Horde answers once. The hidden request
    never reaches the Horde."""
    framing, body, _ = SMUGGLES[case]
    data, hidden = smuggle(b"Connection: close\r\n" + framing, body, "/api/v2/generate/text/async")
    received, closed = exchange(proxied, data)
    assert len(statuses(received)) == 1 and closed, received[:600]
    assert not ran(proxied, hidden)


def test_a_captured_next_request_through_nginx_is_not_run_as_the_attacker_s(harness, proxied):
    victim_key = harness.user(kudos=5)
    hidden = f"/hidden-{uuid.uuid4().hex[:12]}"
    attack = (
        b"POST /api/v2/generate/text/async HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + f"GET {hidden} HTTP/1.1\r\nX-Ignore: ".encode()
    )
    victim = f"GET /api/v2/find_user HTTP/1.1\r\nHost: x\r\napikey: {victim_key}\r\n\r\n".encode()
    received, closed = exchange(proxied, attack + victim)
    assert len(statuses(received)) == 1 and closed and b'"kudos"' not in received
    assert not ran(proxied, hidden)
