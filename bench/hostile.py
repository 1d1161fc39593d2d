"""Hostile bodies against a real `python -m horde serve`: how long they take, and /health meanwhile.

One server process on SQLite (or PostgreSQL) with one worker declared (a native pop, no worker
process). A thread calls GET /health every 10 ms throughout; each scenario
prints its own time and the /health latencies measured while it ran:

* admitted:  10,000 short messages to the native async route, truncated to fit
             (HORDE_MAX_MESSAGES raised to 20,000 for this server);
* front:     the same body to /v1/chat/completions, streamed (it answers once
             admitted; the stream is closed at once);
* refused:   the same body to a server with the default limit (2,048 messages);
* too large: a Content-Length of 100 MiB, headers only: the 413 arrives without
             a byte of the body sent.

    .venv/bin/python bench/hostile.py
    .venv/bin/python bench/hostile.py -n 5 --messages 10000 --postgres

On SQLite every write blocks the whole process (the sqlite3 module does not yield
to gevent), so its /health figures include the insert of the large request; on
PostgreSQL the driver's socket waits let /health through.
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
import threading
import time
import uuid

import _support as S
import requests

from horde.accounts import service as accounts
from horde.app import init_schema
from horde.config import Settings
from horde.runtime import Runtime
from tests.support.processes import Server, base_env

MODEL = "bench/hostile-model"
HEALTH_INTERVAL_S = 0.01
LARGE_BODY_BYTES = 100 * 1024 * 1024


class HealthProbe:
    """GET /health in a loop; latencies are kept with their start time, to pick those inside a window."""

    def __init__(self, url: str):
        self.url = url
        self.samples: list[tuple[float, float]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        with requests.Session() as session:
            while not self._stop.is_set():
                started = time.perf_counter()
                session.get(self.url + "/health", timeout=60).raise_for_status()
                self.samples.append((started, time.perf_counter() - started))
                time.sleep(HEALTH_INTERVAL_S)

    def between(self, start: float, end: float) -> list[float]:
        """Latencies of the calls that were under way at some moment of [start, end]."""
        return [latency for began, latency in self.samples if began <= end and began + latency >= start]

    def stop(self):
        self._stop.set()
        self._thread.join(5)


def messages(count: int) -> list[dict]:
    turns = [
        {"role": "user" if index % 2 == 0 else "assistant", "content": f"message number {index}"}
        for index in range(count - 1)
    ]
    return turns + [{"role": "user", "content": "and the last question"}]


def start(database_url: str, **settings) -> Server:
    return Server(base_env(database_url, HORDE_RATE_LIMIT_PER_MINUTE=1_000_000, **settings))


def declare_worker(url: str, key: str) -> None:
    body = {
        "name": f"bench-{uuid.uuid4().hex[:6]}",
        "models": [MODEL],
        "max_length": 512,
        "max_context_length": 8192,
        "threads": 50,
        "wait": 0,
    }
    requests.post(url + "/api/v2/generate/chat/pop", json=body, headers={"apikey": key}, timeout=30).raise_for_status()


def timed_post(url: str, path: str, body: bytes, headers: dict) -> tuple[float, int]:
    started = time.perf_counter()
    with requests.post(url + path, data=body, headers=headers, timeout=120, stream=True) as response:
        status = response.status_code
    return time.perf_counter() - started, status


def too_large(port: int) -> tuple[float, int]:
    started = time.perf_counter()
    with socket.create_connection(("127.0.0.1", port), timeout=60) as sock:
        sock.sendall(
            f"POST /v1/chat/completions HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\n"
            f"Content-Length: {LARGE_BODY_BYTES}\r\n\r\n".encode()
        )
        head = sock.recv(65536)
    return time.perf_counter() - started, int(head.split()[1])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-n", type=int, default=3, help="rounds of each scenario")
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument(
        "--postgres",
        action="store_true",
        help="run on PostgreSQL (HORDE_BENCH_DATABASE_URL, else the local default) instead of SQLite",
    )
    args = parser.parse_args(argv)

    if args.postgres:
        database = S.PostgresBenchDatabase(S.postgres_admin_url(None)[0], prefix="horde_bench_hostile")
    else:
        database = S.SqliteBenchDatabase("horde-bench-hostile-")
    runtime = Runtime.build(Settings.from_env({}, database_url=database.url))
    init_schema(runtime)
    with runtime.db.transaction() as session:
        _, client_key = accounts.create_user(session, f"bench-client-{uuid.uuid4().hex[:6]}", kudos=1_000_000)
        _, owner_key = accounts.create_user(session, f"bench-owner-{uuid.uuid4().hex[:6]}", trusted=True)
    raised = start(database.url, HORDE_MAX_MESSAGES=args.messages * 2)
    default = start(database.url)
    probes: dict[str, HealthProbe] = {}
    try:
        declare_worker(raised.url, owner_key)
        body = {"model": MODEL, "messages": messages(args.messages), "max_tokens": 64}
        native = json.dumps(body).encode()
        front = json.dumps(dict(body, stream=True)).encode()
        S.log(f"body: {args.messages} messages, {len(native)} bytes")
        scenarios = [
            (
                "admitted (native)",
                raised,
                lambda: timed_post(
                    raised.url,
                    "/api/v2/generate/chat/async",
                    native,
                    {"apikey": client_key, "Content-Type": "application/json"},
                ),
            ),
            (
                "admitted (front, stream)",
                raised,
                lambda: timed_post(
                    raised.url,
                    "/v1/chat/completions",
                    front,
                    {"Authorization": f"Bearer {client_key}", "Content-Type": "application/json"},
                ),
            ),
            (
                "refused (2048 limit)",
                default,
                lambda: timed_post(
                    default.url,
                    "/api/v2/generate/chat/async",
                    native,
                    {"apikey": client_key, "Content-Type": "application/json"},
                ),
            ),
            ("too large (100 MiB declared)", default, lambda: too_large(default.port)),
        ]
        probes = {server.url: HealthProbe(server.url) for server in (raised, default)}
        time.sleep(0.5)
        idle = [latency for probe in probes.values() for latency in probe.between(0, time.perf_counter())]
        rows = [
            ["/health alone", "", "", len(idle), S.ms(S.median(idle)), S.ms(S.percentile(idle, 99)), S.ms(max(idle))]
        ]
        for name, server, run in scenarios:
            times, statuses, during = [], set(), []
            for _ in range(args.n):
                began = time.perf_counter()
                elapsed, status = run()
                times.append(elapsed)
                statuses.add(status)
                during += probes[server.url].between(began, began + elapsed)
            worst = max(during, default=float("nan"))
            rows.append(
                [
                    name,
                    "/".join(map(str, sorted(statuses))),
                    S.ms(S.median(times)),
                    len(during),
                    S.ms(S.median(during)),
                    S.ms(S.percentile(during, 99)),
                    S.ms(worst),
                ]
            )
        print(S.table(["scenario", "HTTP", "median ms", "/health n", "/health p50 ms", "p99 ms", "max ms"], rows))
    finally:
        for probe in probes.values():
            probe.stop()
        for server in (raised, default):
            S.stop_and_remove_log(server)
        runtime.close()
        database.drop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
