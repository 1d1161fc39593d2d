"""Real processes for end-to-end tests: `python -m horde serve` and `python -m horde worker`."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT_S = 30.0
POLL_INTERVAL_S = 0.05


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_until(predicate, timeout_s: float = START_TIMEOUT_S, what: str = "condition"):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        result = predicate()
        if result:
            return result
        time.sleep(POLL_INTERVAL_S)
    raise TimeoutError(f"timed out after {timeout_s} s waiting for {what}")


class Process:
    def __init__(self, args: list[str], env: dict, name: str):
        self.log = tempfile.NamedTemporaryFile(prefix=f"horde-{name}-", suffix=".log", delete=False)
        self.name = name
        self.popen = subprocess.Popen(
            [sys.executable, *args], cwd=ROOT, env=env, stdout=self.log, stderr=subprocess.STDOUT
        )

    def output(self) -> str:
        return Path(self.log.name).read_text(errors="replace")

    def alive(self) -> bool:
        return self.popen.poll() is None

    def stop(self, sig=signal.SIGTERM, timeout_s: float = 10.0) -> int:
        if self.popen.poll() is None:
            self.popen.send_signal(sig)
            try:
                self.popen.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait(5)
        self.log.close()
        return self.popen.returncode


def base_env(database_url: str, **settings) -> dict:
    env = {key: value for key, value in os.environ.items() if not key.startswith("HORDE_")}
    env["HORDE_DATABASE_URL"] = database_url
    env["PYTHONPATH"] = str(ROOT)
    for key, value in settings.items():
        env[key] = str(value)
    return env


class Server(Process):
    def __init__(self, env: dict):
        self.port = free_port()
        super().__init__(self.command(), env, "server")
        self.url = f"http://127.0.0.1:{self.port}"
        try:
            wait_until(self._healthy, what="the server to answer /health")
        except TimeoutError:
            self.stop()
            raise RuntimeError("server did not start:\n" + self.output()) from None

    def command(self) -> list[str]:
        return ["-m", "horde", "serve", "--host", "127.0.0.1", "--port", str(self.port)]

    def _healthy(self) -> bool:
        if not self.alive():
            raise RuntimeError("server exited:\n" + self.output())
        try:
            return requests.get(self.url + "/health", timeout=1).status_code == 200
        except requests.RequestException:
            return False


class GunicornServer(Server):
    """The production command: gunicorn with the Horde's gevent worker class, importing horde.wsgi."""

    WORKERS = 2
    GRACEFUL_TIMEOUT_S = 60

    def command(self) -> list[str]:
        return [
            "-m",
            "gunicorn",
            "-k",
            "horde.gunicorn_worker.HordeWorker",
            "-w",
            str(self.WORKERS),
            "-b",
            f"127.0.0.1:{self.port}",
            "--graceful-timeout",
            str(self.GRACEFUL_TIMEOUT_S),
            "horde.wsgi:app",
        ]


class Worker(Process):
    def __init__(self, server: Server, api_key: str, name: str, models: list[str], *extra: str, env: dict):
        args = ["-m", "horde", "worker", "--horde-url", server.url, f"--api-key={api_key}", "--name", name]
        for model in models:
            args += ["--model", model]
        super().__init__(args + list(extra), env, f"worker-{name}")
        self.worker_name = name
        self.server = server
        try:
            wait_until(self._online, what=f"worker {name} to pop")
        except TimeoutError:
            self.stop()
            raise RuntimeError(f"worker {name} did not come online:\n" + self.output()) from None

    def _online(self) -> bool:
        if not self.alive():
            raise RuntimeError(f"worker {self.worker_name} exited:\n" + self.output())
        for kind in ("chat", "text"):
            stats = requests.get(self.server.url + f"/api/v2/status/models?type={kind}", timeout=2).json()
            if any(self.worker_name in stat.get("worker_names", ()) for stat in stats):
                return True
        return False


class Gunicorn(Process):
    """The production command: `gunicorn -k WORKER_CLASS -w N 'horde.wsgi:app'` on a free port (gunicorn's own
    gevent worker unless told; the README's command names the Horde's, horde/gunicorn_worker.py)."""

    def __init__(self, env: dict, processes: int = 2, worker_connections: int = 2000, worker_class: str = "gevent"):
        self.port = free_port()
        self.processes = processes
        super().__init__(
            [
                "-m",
                "gunicorn",
                "-k",
                worker_class,
                "-w",
                str(processes),
                "--worker-connections",
                str(worker_connections),
                "-b",
                f"127.0.0.1:{self.port}",
                "horde.wsgi:app",
            ],
            env,
            "gunicorn",
        )
        self.url = f"http://127.0.0.1:{self.port}"
        try:
            wait_until(self._ready, timeout_s=60, what="gunicorn's processes to answer /health")
        except TimeoutError:
            self.stop()
            raise RuntimeError("gunicorn did not start:\n" + self.output()) from None

    def worker_pids(self) -> list[int]:
        """The processes gunicorn forked (its workers), from /proc."""
        pids = []
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    stat = (entry / "stat").read_text()
                except OSError:
                    continue
                if int(stat.rsplit(")", 1)[1].split()[1]) == self.popen.pid:
                    pids.append(int(entry.name))
        return pids

    def _ready(self) -> bool:
        if not self.alive():
            raise RuntimeError("gunicorn exited:\n" + self.output())
        if len(self.worker_pids()) < self.processes:
            return False
        try:
            return requests.get(self.url + "/health", timeout=1).status_code == 200
        except requests.RequestException:
            return False
