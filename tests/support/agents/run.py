"""Running a client once: a fresh HOME, no network but the Horde, a timeout, and its output kept for the failure
message."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

CLIENT_TIMEOUT_S = 180.0
OUTPUT_TAIL_CHARS = 6000
#: The discard port of this machine: a client that ignores its switches and phones home through the proxy
#: variables fails at once instead of reaching out or hanging; the Horde (loopback) is exempt.
NOWHERE_PROXY = "http://127.0.0.1:9"
LOOPBACK = "127.0.0.1,localhost"


@dataclass(frozen=True)
class ClientRun:
    argv: list[str]
    returncode: int | None  # None: it ran past its timeout and was killed
    stdout: str
    stderr: str
    elapsed_s: float

    def __repr__(self) -> str:
        ended = "timed out" if self.returncode is None else f"exited {self.returncode}"
        return f"<{Path(self.argv[0]).name} {ended}>"

    def report(self) -> str:
        """What a failing assertion shows: the command, how it ended, and the tails of both streams."""
        ended = "timed out" if self.returncode is None else f"exited {self.returncode}"
        return (
            f"$ {' '.join(self.argv)}\n{ended} after {self.elapsed_s:.1f} s\n"
            f"--- stdout ---\n{self.stdout[-OUTPUT_TAIL_CHARS:]}\n--- stderr ---\n{self.stderr[-OUTPUT_TAIL_CHARS:]}"
        )


def sealed_env(home: Path, proxy_guard: bool = True, **variables: str) -> dict[str, str]:
    """The environment a client runs in: nothing of this machine's but PATH, a HOME of its own (with its XDG
    folders), telemetry off by the common switches, the proxy variables that fail any address but the Horde's
    (`proxy_guard`, for clients that honour NO_PROXY), and `variables` (the client's own)."""
    for folder in (".config", ".cache", ".local/share", ".local/state"):
        (home / folder).mkdir(parents=True, exist_ok=True)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_DATA_HOME": str(home / ".local/share"),
        "XDG_STATE_HOME": str(home / ".local/state"),
        "TMPDIR": str(home),
        "LANG": "C.UTF-8",
        "TERM": "dumb",
        "NO_COLOR": "1",
        "DO_NOT_TRACK": "1",
    }
    if proxy_guard:
        for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
            env[name] = NOWHERE_PROXY
        env["NO_PROXY"] = env["no_proxy"] = LOOPBACK
    env.update(variables)
    return env


def run_client(argv: list[str], cwd: Path, env: dict[str, str], timeout_s: float = CLIENT_TIMEOUT_S) -> ClientRun:
    """Run `argv` to its end (or its timeout: then its whole process group is killed), stdin closed."""
    started = time.monotonic()
    process = subprocess.Popen(
        argv,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        errors="replace",
        start_new_session=True,
    )
    try:
        stdout, stderr = process.communicate(timeout=timeout_s)
        returncode: int | None = process.returncode
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        stdout, stderr = process.communicate()
        returncode = None
    return ClientRun(list(argv), returncode, stdout, stderr, time.monotonic() - started)
