"""Shared helpers of the benchmark scripts: paths, percentiles, tables, throwaway databases.

Each bench script imports this module: it lives next to them, so `import _support` works when a
script runs as `python bench/<name>.py`. The project itself comes from the editable install that
scripts/setup.sh makes.
"""

from __future__ import annotations

import contextlib
import math
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

DEFAULT_POSTGRES_URL = "postgresql://root@127.0.0.1:5432/test"
POSTGRES_ENV = "HORDE_BENCH_DATABASE_URL"


# -- figures ------------------------------------------------------------------------


def percentile(values, q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of a non-empty sequence."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


def median(values) -> float:
    return statistics.median(values) if values else float("nan")


def ms(seconds: float) -> str:
    return "-" if seconds is None or math.isnan(seconds) else f"{seconds * 1000:.2f}"


def table(headers: list[str], rows: list[list]) -> str:
    cells = [[str(cell) for cell in row] for row in rows]
    widths = [
        max(len(str(header)), *(len(row[i]) for row in cells)) if cells else len(str(header))
        for i, header in enumerate(headers)
    ]
    line = "  ".join(str(header).rjust(width) for header, width in zip(headers, widths, strict=False))
    out = [line, "  ".join("-" * width for width in widths)]
    for row in cells:
        out.append("  ".join(cell.rjust(width) for cell, width in zip(row, widths, strict=False)))
    return "\n".join(out)


#: The additions of the speed probe: about half a second to one second of CPU on the 2-core machines we use.
SPEED_PROBE_ADDITIONS = 10_000_000


def machine_speed_s() -> float:
    """Seconds a Python loop of SPEED_PROBE_ADDITIONS additions takes now: a shared machine's speed can change by
    two within an hour, so a run prints it beside its figures, and runs made at different moments can be told
    apart. Only runs made side by side compare code."""
    started, total = time.perf_counter(), 0
    for number in range(SPEED_PROBE_ADDITIONS):
        total += number
    return time.perf_counter() - started


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# -- databases ----------------------------------------------------------------------


def _driver_url(url: str) -> str:
    return "postgresql+psycopg://" + url.split("://", 1)[1] if url.startswith("postgresql://") else url


def postgres_admin_url(given: str | None) -> tuple[str, bool]:
    """(url, explicit): the flag, else HORDE_BENCH_DATABASE_URL, else the local default."""
    if given:
        return given, True
    if os.environ.get(POSTGRES_ENV):
        return os.environ[POSTGRES_ENV], True
    return DEFAULT_POSTGRES_URL, False


def postgres_reachable(admin_url: str) -> str | None:
    """None when the server answers, else why not."""
    from sqlalchemy import create_engine, text

    try:
        engine = create_engine(_driver_url(admin_url), connect_args={"connect_timeout": 3})
        try:
            with engine.connect() as connection:
                connection.execute(text("SELECT 1"))
        finally:
            engine.dispose()
    except Exception as exc:  # any failure means: skip PostgreSQL
        return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    return None


def PostgresBenchDatabase(admin_url: str, prefix: str = "horde_bench"):
    """A database of its own on the server the admin URL names; dropped by drop()."""
    from horde_testing.databases import PostgresDatabase

    return PostgresDatabase(admin_url, prefix=prefix)


class SqliteBenchDatabase:
    """A SQLite file in a temporary folder; drop() removes the folder."""

    def __init__(self, prefix: str = "horde-bench-"):
        self._dir = tempfile.TemporaryDirectory(prefix=prefix)
        self.url = f"sqlite:///{Path(self._dir.name) / 'horde.db'}"

    def drop(self) -> None:
        self._dir.cleanup()


# -- processes ----------------------------------------------------------------------


def database_backends(runtime) -> list[int]:
    """PostgreSQL on this machine: the processes of the backends connected to the bench's database now (the
    servers' pools keep theirs open through the run); none elsewhere: SQLite, or a server whose process ids are
    not this machine's."""
    if not runtime.db.is_postgresql:
        return []
    with runtime.db.read() as session:
        pids = session.connection().exec_driver_sql(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
        pids = [pid for (pid,) in pids]
    return [pid for pid in pids if _is_postgres_process(pid)]


def _is_postgres_process(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip() == "postgres"
    except OSError:
        return False


def rss_kib(pid: int) -> int:
    """Resident set size of a process, KiB (VmRSS of /proc/<pid>/status)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for pid {pid}")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (from /proc/<pid>/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def stop_and_remove_log(process) -> None:
    """Stop a horde_testing.processes.Process and delete its log file."""
    process.stop()
    with contextlib.suppress(OSError):
        os.unlink(process.log.name)
