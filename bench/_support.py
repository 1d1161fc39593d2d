"""Shared helpers of the benchmark scripts: paths, percentiles, tables, throwaway databases.

Each bench script imports this module: it lives next to them, so `import _support` works when a
script runs as `python bench/<name>.py`. The project itself comes from the editable install that
scripts/setup.sh makes.
"""

from __future__ import annotations

import argparse
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
    from tests.support.databases import PostgresDatabase

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
    """Stop a tests.support.processes.Process and delete its log file."""
    process.stop()
    with contextlib.suppress(OSError):
        os.unlink(process.log.name)


def backends_parser(description: str):
    """An argument parser with --backend (postgresql, sqlite or both; default both) and --postgres-url."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--backend", choices=["postgresql", "sqlite", "both"], default="both")
    parser.add_argument("--postgres-url", default=None, help="admin URL of a PostgreSQL server")
    return parser


def rows_of_each_backend(args, measure) -> list[list]:
    """`measure(backend, admin_url, args)`'s rows for each backend of backends_parser's arguments that can run."""
    admin_url, explicit = postgres_admin_url(args.postgres_url)
    rows = []
    for backend in chosen_backends(args.backend, admin_url, explicit):
        rows += measure(backend, admin_url, args)
    return rows


def chosen_backends(choice: str, admin_url: str, explicit: bool) -> list[str]:
    """The backends of `--backend` (postgresql, sqlite or both) that can run: PostgreSQL is skipped with a line when
    it does not answer, unless it was asked for by name or by URL (then the bench stops, saying why)."""
    backends = ["postgresql", "sqlite"] if choice == "both" else [choice]
    if "postgresql" in backends:
        why = postgres_reachable(admin_url)
        if why:
            if explicit or choice == "postgresql":
                raise SystemExit(f"PostgreSQL at {admin_url} is not reachable: {why}")
            log(f"postgresql skipped: {why}")
            backends.remove("postgresql")
    return backends


def server_label(backend: str) -> str:
    return f"python -m horde serve, {'PostgreSQL' if backend == 'postgresql' else 'SQLite'}"


#: The columns of timed_calls' figures.
CALL_HEADERS = ["calls", "p50 ms", "p90 ms", "server CPU ms/call", "db CPU ms/call"]


@contextlib.contextmanager
def fresh_runtime(backend: str, admin_url: str, name: str):
    """A Runtime on a new database of `backend` with the schema created (named after the bench), dropped after."""
    from horde.app import init_schema
    from horde.config import Settings
    from horde.runtime import Runtime

    if backend == "postgresql":
        database = PostgresBenchDatabase(admin_url, prefix=f"horde_bench_{name}")
    else:
        database = SqliteBenchDatabase(f"horde-bench-{name}-")
    runtime = None
    try:
        runtime = Runtime.build(Settings.from_env({}, database_url=database.url))
        init_schema(runtime)
        yield runtime
    finally:
        if runtime is not None:
            runtime.close()
        database.drop()


def timed_calls(server_pid: int, database_pids: list[int], calls: int, call) -> list[str]:
    """`call()` `calls` times in turn: [calls, p50 ms, p90 ms, the server's CPU ms per call, the database's ("-"
    without its processes)], as a bench's row prints them."""
    latencies = []
    server_cpu = cpu_seconds(server_pid)
    database_cpu = sum(cpu_seconds(pid) for pid in database_pids)
    for _ in range(calls):
        sent = time.perf_counter()
        call()
        latencies.append(time.perf_counter() - sent)
    server_ms = (cpu_seconds(server_pid) - server_cpu) * 1000 / calls
    database_ms = (sum(cpu_seconds(pid) for pid in database_pids) - database_cpu) * 1000 / calls
    return [
        str(calls),
        ms(median(latencies)),
        ms(percentile(latencies, 90)),
        f"{server_ms:.2f}",
        f"{database_ms:.2f}" if database_pids else "-",
    ]
