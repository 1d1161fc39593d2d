"""Running llama-server on a free local port for the lifetime of a `with` block."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def _port_is_free(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        # like the server: ignore TIME_WAIT leftovers, fail only on a live listener
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
        return True


def _die_with_parent() -> None:  # pragma: no cover - runs in the child
    """preexec_fn: ask Linux to SIGTERM the server when its parent dies."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except Exception:
        pass


class LlamaServerError(RuntimeError):
    pass


# local requests must not go through an HTTP(S)_PROXY from the environment
_NO_PROXY_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class LlamaServer:
    """Run ``llama-server`` on a free local port for the lifetime of a ``with`` block.

    >>> with LlamaServer(build_llama_server(), write_tiny_model(tmp / "m.gguf")) as srv:
    ...     requests.post(srv.v1_url + "/chat/completions", json={...})

    Command: ``llama-server -m MODEL -c CTX -np PARALLEL --no-webui --jinja
    --host 127.0.0.1 --port PORT [extra_args]``.  Note that llama-server splits
    the context between the slots: ``ctx=4096, parallel=2`` gives 2048 tokens
    per request (``/props`` -> ``default_generation_settings.n_ctx``).  Ready
    means ``GET /health`` answered 200 (polled, bounded by *startup_timeout*);
    the server output goes to *log_path* (default: a temp file, deleted on a
    clean stop unless *keep_log*) and is included in startup errors.
    """

    def __init__(
        self,
        binary: str | os.PathLike[str],
        model_path: str | os.PathLike[str],
        ctx: int = 4096,
        parallel: int = 2,
        *,
        port: int | None = None,
        host: str = "127.0.0.1",
        extra_args: Sequence[str] = (),
        startup_timeout: float = 60.0,
        stop_timeout: float = 10.0,
        log_path: str | os.PathLike[str] | None = None,
        keep_log: bool = False,
        kill_on_parent_exit: bool = True,
    ) -> None:
        self.binary = Path(binary)
        self.model_path = Path(model_path)
        self.ctx = ctx
        self.parallel = parallel
        self.host = host
        self.port = port
        self.extra_args = list(extra_args)
        self.startup_timeout = startup_timeout
        self.stop_timeout = stop_timeout
        self._log_path_arg = Path(log_path) if log_path else None
        self.keep_log = keep_log or log_path is not None
        self.kill_on_parent_exit = kill_on_parent_exit
        self.log_path: Path | None = None
        self.proc: subprocess.Popen[bytes] | None = None
        self._log_fh = None

    # -- urls ---------------------------------------------------------------
    @property
    def url(self) -> str:
        """Root URL, e.g. ``http://127.0.0.1:PORT`` (``/health``, ``/props``)."""
        return f"http://{self.host}:{self.port}"

    @property
    def v1_url(self) -> str:
        """OpenAI base URL, e.g. ``http://127.0.0.1:PORT/v1``."""
        return self.url + "/v1"

    base_url = v1_url

    def command(self) -> list[str]:
        return [
            str(self.binary),
            "-m",
            str(self.model_path),
            "-c",
            str(self.ctx),
            "-np",
            str(self.parallel),
            "--no-webui",
            "--jinja",
            "--host",
            self.host,
            "--port",
            str(self.port),
            *self.extra_args,
        ]

    def log_text(self) -> str:
        if self.log_path and self.log_path.exists():
            return self.log_path.read_text(errors="replace")
        return ""

    def props(self) -> dict:
        """``GET /props`` (n_ctx per slot, total_slots, chat_template_caps, ...)."""
        with _NO_PROXY_OPENER.open(self.url + "/props", timeout=10) as r:
            return json.loads(r.read())

    # -- lifecycle ----------------------------------------------------------
    def start(self) -> LlamaServer:
        if self.proc is not None:
            raise LlamaServerError("already started")
        if not self.binary.is_file():
            raise FileNotFoundError(self.binary)
        if not self.model_path.is_file():
            raise FileNotFoundError(self.model_path)
        if self.port is None:
            self.port = free_port(self.host)
        elif not _port_is_free(self.host, self.port):
            # otherwise /health could be answered by whatever holds the port
            raise LlamaServerError(f"port {self.host}:{self.port} is already in use")
        if self._log_path_arg:
            self.log_path = self._log_path_arg
        else:
            fd, name = tempfile.mkstemp(prefix="llama-server-", suffix=".log")
            os.close(fd)
            self.log_path = Path(name)
        self._log_fh = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            self.command(),
            stdin=subprocess.DEVNULL,
            stdout=self._log_fh,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=_die_with_parent if (self.kill_on_parent_exit and sys.platform.startswith("linux")) else None,
        )
        try:
            self._wait_ready()
        except BaseException:
            self.keep_log = True  # the exception names it
            self.stop()
            raise
        return self

    def _wait_ready(self) -> None:
        assert self.proc is not None
        deadline = time.monotonic() + self.startup_timeout
        delay = 0.02
        last_err = "no answer yet"
        while True:
            rc = self.proc.poll()
            if rc is not None:
                raise LlamaServerError(
                    f"llama-server exited with code {rc} during startup\n"
                    f"command: {' '.join(self.command())}\nlog ({self.log_path}):\n"
                    f"{self.log_text()[-4000:]}"
                )
            try:
                with _NO_PROXY_OPENER.open(self.url + "/health", timeout=2) as r:
                    if r.status == 200 and self.proc.poll() is None:
                        return
                    last_err = f"HTTP {r.status}"
            except urllib.error.HTTPError as e:  # 503 while the model loads
                last_err = f"HTTP {e.code}"
            except (urllib.error.URLError, OSError) as e:
                last_err = repr(e)
            if time.monotonic() > deadline:
                raise LlamaServerError(
                    f"llama-server not ready after {self.startup_timeout}s ({last_err})\n"
                    f"command: {' '.join(self.command())}\nlog ({self.log_path}):\n"
                    f"{self.log_text()[-4000:]}"
                )
            time.sleep(delay)
            delay = min(delay * 1.5, 0.25)

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=self.stop_timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=self.stop_timeout)
        if self._log_fh is not None:
            self._log_fh.close()
            self._log_fh = None
            if not self.keep_log and self.log_path is not None:
                with contextlib.suppress(OSError):
                    self.log_path.unlink()

    def __enter__(self) -> LlamaServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
