"""Connection floods against the production command: /health and a /v1 call while thousands of connections
hold the server, and after they go.

The server is `gunicorn -k horde.gunicorn_worker.HordeWorker -w 2 --worker-connections 2000` on PostgreSQL
+ Redis (the README's production command), or `python -m horde serve` on SQLite (`--backend sqlite`). This
process (gevent) opens N connections (default 3,000) of one kind at a time:

* slow-body: a POST /v1/chat/completions whose head announces `Content-Length: 100000`, then one byte of
  body a second;
* idle:      a connection that sends nothing.

Each one the server closes (a timeout, a shed, an answer) is opened again at once, so that N stay open from
the attacker's side. The flood runs in FLOOD_PROCESSES processes of its own (`--hold`), so that its work does
not delay the probes. Once the N are open, for D seconds a probe in this process sends `GET /health`, then
`GET /v1/models`, each on a new connection, one after the other, every PROBE_GAP_S; a probe that has no answer
within PROBE_TIMEOUT_S counts as failed, at that latency. Then the flood's processes stop (their connections
close) and the probe runs D seconds more.

Printed per flood: the phase (during, after), the probes and how many failed, /health and /v1/models p50 and
p99, the flood's connections open as this process sees them and how often the server closed one, and the
server processes' RSS (their sum: before the flood, its peak, at the end).

    .venv/bin/python bench/connections.py                          # PostgreSQL + Redis, 3,000 connections
    .venv/bin/python bench/connections.py --backend sqlite -n 1000 -d 10
    .venv/bin/python bench/connections.py --flood idle

The venv imports this checkout; run it from another checkout (with that checkout's venv) to measure that code.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import resource
import sys
import time
import uuid

import _support as S
import gevent
import gevent.pool
from gevent import socket, subprocess

from horde.app import init_schema
from horde.config import Settings
from horde.runtime import Runtime
from tests.support.processes import Gunicorn, Server, base_env

HORDE_WORKER_CLASS = "horde.gunicorn_worker.HordeWorker"
PROBE_TIMEOUT_S = 10.0
PROBE_GAP_S = 0.1
RSS_EVERY_S = 0.5
RAMP_TIMEOUT_S = 60.0
SLOW_BODY_BYTES = 100_000
SLOW_BODY_GAP_S = 1.0
REOPEN_PAUSE_S = 0.1
FLOODS = ("slow-body", "idle")
FLOOD_PROCESSES = 2
REPORT_EVERY_S = 0.5


class Flood:
    """N connections of one kind, each opened again as soon as the server closes it."""

    def __init__(self, port: int, kind: str, count: int):
        self.port = port
        self.kind = kind
        self.count = count
        self.open = 0
        self.closed_by_server = 0
        self.refused = 0
        self._stopping = False
        self._sockets: set[socket.socket] = set()
        self._pool = gevent.pool.Group()

    def start(self) -> None:
        for _ in range(self.count):
            self._pool.spawn(self._hold)

    def stop(self) -> None:
        self._stopping = True
        for sock in list(self._sockets):
            with contextlib.suppress(OSError):
                sock.close()
        self._pool.kill(block=True, timeout=10)

    def _hold(self) -> None:
        while not self._stopping:
            try:
                sock = socket.create_connection(("127.0.0.1", self.port), timeout=PROBE_TIMEOUT_S)
            except OSError:
                self.refused += 1
                gevent.sleep(REOPEN_PAUSE_S)
                continue
            self._sockets.add(sock)
            self.open += 1
            try:
                self._keep(sock)
            except OSError:
                pass
            finally:
                self.open -= 1
                self._sockets.discard(sock)
                sock.close()
            if not self._stopping:
                self.closed_by_server += 1

    def _keep(self, sock: socket.socket) -> None:
        """Return when the server closed the connection (or answered it)."""
        if self.kind == "idle":
            sock.settimeout(None)
            sock.recv(65536)
            return
        sock.sendall(
            b"POST /v1/chat/completions HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\n"
            + b"Content-Length: %d\r\n\r\n{" % SLOW_BODY_BYTES
        )
        sock.settimeout(SLOW_BODY_GAP_S)
        while not self._stopping:
            try:
                sock.recv(65536)
                return  # an answer (408) or the close
            except TimeoutError:
                sock.sendall(b" ")


def hold(kind: str, port: int, count: int) -> int:
    """A flood process: hold `count` connections until killed, printing "open closed refused" as they change."""
    flood = Flood(port, kind, count)
    flood.start()
    while True:
        print(flood.open, flood.closed_by_server, flood.refused, flush=True)
        gevent.sleep(REPORT_EVERY_S)


class FloodProcesses:
    """The flood, split over FLOOD_PROCESSES processes running `hold`; their last reports, summed."""

    def __init__(self, port: int, kind: str, count: int):
        shares = [count // FLOOD_PROCESSES + (index < count % FLOOD_PROCESSES) for index in range(FLOOD_PROCESSES)]
        self.processes = [
            subprocess.Popen(
                [sys.executable, __file__, "--hold", kind, str(port), str(share)],
                stdout=subprocess.PIPE,
                text=True,
            )
            for share in shares
        ]
        self.reports = [(0, 0, 0)] * len(self.processes)
        self._readers = [gevent.spawn(self._read, index) for index in range(len(self.processes))]

    def _read(self, index: int) -> None:
        stream = self.processes[index].stdout
        assert stream is not None
        for line in stream:
            self.reports[index] = tuple(int(part) for part in line.split())

    @property
    def open(self) -> int:
        return sum(report[0] for report in self.reports)

    @property
    def closed_by_server(self) -> int:
        return sum(report[1] for report in self.reports)

    def stop(self) -> None:
        for process in self.processes:
            process.kill()
            process.wait(10)
        gevent.killall(self._readers)


def probe(port: int, path: str) -> float | None:
    """Seconds until the whole answer to GET `path` on a new connection, or None: no answer in time."""
    started = time.perf_counter()
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=PROBE_TIMEOUT_S) as sock:
            sock.sendall(f"GET {path} HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n".encode())
            received = b""
            while chunk := sock.recv(65536):
                received += chunk
    except OSError:
        return None
    if not received.startswith(b"HTTP/1.1 200"):
        return None
    return time.perf_counter() - started


class Probes:
    def __init__(self, port: int):
        self.port = port
        self.samples: dict[str, list[float | None]] = {"/health": [], "/v1/models": []}

    def run_for(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            for path, samples in self.samples.items():
                samples.append(probe(self.port, path))
            gevent.sleep(PROBE_GAP_S)

    def figures(self) -> list:
        row = [sum(len(samples) for samples in self.samples.values())]
        row.append(sum(1 for samples in self.samples.values() for sample in samples if sample is None))
        for samples in self.samples.values():
            counted = [PROBE_TIMEOUT_S if sample is None else sample for sample in samples]
            row += [S.ms(S.median(counted)), S.ms(S.percentile(counted, 99))]
        return row


class Rss:
    """The server processes' RSS, summed, sampled every RSS_EVERY_S: the peak and the last."""

    def __init__(self, pids):
        self.pids = pids
        self.peak = self.last = 0
        self._sampler = gevent.spawn(self._sample)

    def now_mb(self) -> float:
        total = 0
        for pid in self.pids():
            with contextlib.suppress(OSError):
                total += S.rss_kib(pid)
        return total / 1024

    def _sample(self) -> None:
        while True:
            self.last = self.now_mb()
            self.peak = max(self.peak, self.last)
            gevent.sleep(RSS_EVERY_S)

    def stop(self) -> None:
        self._sampler.kill()


def start_server(args, database_url: str, redis_url: str | None):
    settings = {"HORDE_RATE_LIMIT_PER_MINUTE": 1_000_000_000}
    if redis_url:
        settings |= {"HORDE_REDIS_URL": redis_url, "HORDE_REDIS_PREFIX": f"horde_bench_{uuid.uuid4().hex[:8]}"}
    env = base_env(database_url, **settings)
    if args.backend == "sqlite":
        server = Server(env)
        return server, "python -m horde serve, SQLite", lambda: [server.popen.pid]
    server = Gunicorn(
        env, processes=args.processes, worker_connections=args.worker_connections, worker_class=HORDE_WORKER_CLASS
    )
    label = f"gunicorn -k HordeWorker -w {args.processes} --worker-connections {args.worker_connections}, PostgreSQL"
    label += " + Redis" if redis_url else ""
    return server, label, lambda: [server.popen.pid, *server.worker_pids()]


def run_flood(args, kind: str, database_url: str, redis_url: str | None) -> list[list]:
    server, label, pids = start_server(args, database_url, redis_url)
    rows = []
    rss = Rss(pids)
    try:
        before_mb = rss.now_mb()
        S.log(f"{label}: opening {args.connections} {kind} connections")
        flood = FloodProcesses(server.port, kind, args.connections)
        deadline = time.monotonic() + RAMP_TIMEOUT_S
        while flood.open < args.connections and time.monotonic() < deadline:
            gevent.sleep(0.2)
        S.log(f"{flood.open} open; probing for {args.duration} s")
        probes = Probes(server.port)
        probes.run_for(args.duration)
        held, reopened = flood.open, flood.closed_by_server
        during_peak = rss.peak
        figures = [*probes.figures(), held, reopened, f"{before_mb:.0f}", f"{during_peak:.0f}"]
        rows.append([label, kind, "during", *figures])
        flood.stop()
        S.log(f"flood closed; probing for {args.duration} s")
        probes = Probes(server.port)
        probes.run_for(args.duration)
        rows.append([label, kind, "after", *probes.figures(), 0, "", "", f"{rss.last:.0f}"])
    finally:
        rss.stop()
        S.stop_and_remove_log(server)
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", choices=("postgresql", "sqlite"), default="postgresql")
    parser.add_argument("--flood", choices=(*FLOODS, "both"), default="both")
    parser.add_argument("-n", "--connections", type=int, default=3000, help="flood connections (default 3000)")
    parser.add_argument("-d", "--duration", type=float, default=20, help="seconds of probes during and after")
    parser.add_argument("-w", "--processes", type=int, default=2, help="gunicorn processes (default 2)")
    parser.add_argument("--worker-connections", type=int, default=2000, help="gunicorn's (default 2000)")
    parser.add_argument("--postgres-url", help="admin URL (else HORDE_BENCH_DATABASE_URL, else the local default)")
    parser.add_argument("--redis-url", default=os.environ.get("HORDE_BENCH_REDIS_URL", "redis://127.0.0.1:6379/0"))
    parser.add_argument("--hold", nargs=3, metavar=("KIND", "PORT", "COUNT"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.hold:
        _raise_open_files()
        return hold(args.hold[0], int(args.hold[1]), int(args.hold[2]))

    hard = _raise_open_files()
    if hard != resource.RLIM_INFINITY and hard < args.connections // FLOOD_PROCESSES + 500:
        print(f"the open files limit ({hard}) is too low for {args.connections} connections", file=sys.stderr)
        return 2
    print(f"flood: {args.connections} connections; probes on new connections, failed after {PROBE_TIMEOUT_S:.0f} s")
    headers = ["server", "flood", "phase", "probes", "failed", "/health p50 ms", "p99 ms", "/v1/models p50 ms"]
    headers += ["p99 ms", "flood open", "closed by server", "RSS MB before", "RSS MB peak / end"]
    for kind in FLOODS if args.flood == "both" else (args.flood,):
        speed = S.machine_speed_s()
        if args.backend == "postgresql":
            database = S.PostgresBenchDatabase(S.postgres_admin_url(args.postgres_url)[0], prefix="horde_bench_conn")
            redis_url = args.redis_url or None
        else:
            database, redis_url = S.SqliteBenchDatabase("horde-bench-conn-"), None
        runtime = Runtime.build(Settings.from_env({}, database_url=database.url))
        try:
            init_schema(runtime)
            rows = run_flood(args, kind, database.url, redis_url)
        finally:
            runtime.close()
            database.drop()
        print(S.table(headers, rows), flush=True)
        print(f"machine: a Python loop of 10,000,000 additions took {speed:.2f} s before this flood", flush=True)
    return 0


def _raise_open_files() -> int:
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return hard


if __name__ == "__main__":
    sys.exit(main())
