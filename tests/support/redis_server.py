"""A throwaway redis-server on a free port, to make Redis come and go without touching the machine's own."""

from __future__ import annotations

import shutil
import subprocess

import redis

from tests.support.processes import free_port, wait_until

REDIS_SERVER = "redis-server"


def available() -> bool:
    return shutil.which(REDIS_SERVER) is not None


class RedisServer:
    """`start()` runs redis-server on `port` without persistence; `kill()` stops it at once, as a crash would."""

    def __init__(self, port: int | None = None):
        self.port = port or free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self._process: subprocess.Popen | None = None

    def start(self) -> None:
        self._process = subprocess.Popen(
            [REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_until(self._answers, what=f"redis-server on port {self.port}")

    def kill(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.kill()
            self._process.wait(10)
        self._process = None

    def _answers(self) -> bool:
        if self._process is not None and self._process.poll() is not None:
            raise RuntimeError(f"redis-server exited with {self._process.returncode}")
        client = redis.Redis(port=self.port, socket_connect_timeout=0.5)
        try:
            return bool(client.ping())
        except redis.RedisError:
            return False
        finally:
            client.close()
