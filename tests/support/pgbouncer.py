"""Debian's pgbouncer in transaction mode, running the configuration docs/how-to/production.md gives.

The documented configuration runs as it stands but for what a test needs of its own: its address (a free port on
the loopback), the PostgreSQL server it points at (any database of it: `* = host=... port=...`), trust as its
authentication (a user list of the test's user, no password), and a folder of its own for its log and pid. It
installs nothing: `PGBOUNCER` is None where the machine has no pgbouncer (CI installs Debian's in .ci/run).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from sqlalchemy import make_url

from tests.support.processes import ROOT, free_port, wait_until

PGBOUNCER = shutil.which("pgbouncer") or next(
    (path for path in ("/usr/sbin/pgbouncer",) if os.access(path, os.X_OK)), None
)
PRODUCTION_DOC = ROOT / "docs" / "how-to" / "production.md"
#: pgbouncer refuses to run as root; as root it is started as this user (its folder is made writable to it).
UNPRIVILEGED_USER = "nobody"
#: The keys of the documented [pgbouncer] section that a test sets to its own values.
OWN_KEYS = ("listen_addr", "listen_port", "auth_type", "auth_file", "logfile", "pidfile", "unix_socket_dir")


def documented_config() -> str:
    """The one pgbouncer configuration of docs/how-to/production.md (its ```ini block)."""
    blocks = re.findall(r"```ini\n(.*?)```", PRODUCTION_DOC.read_text(), re.S)
    assert len(blocks) == 1, "production.md holds one pgbouncer configuration"
    return blocks[0]


def local_config(
    documented: str, upstream_host: str, upstream_port: int, folder: Path, port: int, extra: dict[str, str]
) -> str:
    """`documented` with the test's own database line, address, authentication and files, and `extra` settings."""
    sections = re.split(r"^(\[\w+\])\s*$", documented, flags=re.M)
    assert sections[1::2] == ["[databases]", "[pgbouncer]"], "the documented configuration's sections"
    settings = [
        line
        for line in sections[4].splitlines()
        if line.strip()
        and not line.lstrip().startswith(";")
        and line.split("=", 1)[0].strip() not in (*OWN_KEYS, *extra)
    ]
    own = {
        "listen_addr": "127.0.0.1",
        "listen_port": str(port),
        "auth_type": "trust",
        "auth_file": str(folder / "userlist.txt"),
        "logfile": str(folder / "pgbouncer.log"),
        "pidfile": str(folder / "pgbouncer.pid"),
        "unix_socket_dir": "",
        **extra,
    }
    lines = ["[databases]", f"* = host={upstream_host} port={upstream_port}", "", "[pgbouncer]", *settings]
    lines += [f"{key} = {value}" for key, value in own.items()]
    return "\n".join(lines) + "\n"


class PgBouncer:
    """pgbouncer with the documented configuration in front of the PostgreSQL server `upstream_url` names.
    `extra`: settings of its [pgbouncer] section beside (or instead of) the documented ones."""

    def __init__(self, upstream_url: str, config: str | None = None, extra: dict[str, str] | None = None):
        upstream = make_url(upstream_url)
        self.user = upstream.username or "postgres"
        self.port = free_port()
        self.folder = Path(tempfile.mkdtemp(prefix="horde-pgbouncer-"))
        os.chmod(self.folder, 0o777)  # the unprivileged user writes its log and pid here
        (self.folder / "userlist.txt").write_text(f'"{self.user}" ""\n')
        text = local_config(
            config or documented_config(),
            upstream.host or "127.0.0.1",
            upstream.port or 5432,
            self.folder,
            self.port,
            extra or {},
        )
        (self.folder / "pgbouncer.ini").write_text(text)
        command = [str(PGBOUNCER), str(self.folder / "pgbouncer.ini")]
        if os.geteuid() == 0:
            command[1:1] = ["-u", UNPRIVILEGED_USER]
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        try:
            wait_until(self._listening, what="pgbouncer to listen")
        except BaseException:
            self.stop()
            raise

    def url_for(self, database_url: str) -> str:
        """`database_url` (a database of the upstream server) reached through this pgbouncer."""
        through = make_url(database_url).set(host="127.0.0.1", port=self.port)
        return through.render_as_string(hide_password=False)

    def log(self) -> str:
        path = self.folder / "pgbouncer.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def _listening(self) -> bool:
        if self.process.poll() is not None:
            raise RuntimeError("pgbouncer exited:\n" + self.log())
        return f"listening on 127.0.0.1:{self.port}" in self.log()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
        shutil.rmtree(self.folder, ignore_errors=True)
