"""Outages, re-run as issue 10 found them: PostgreSQL dropped under open calls, Redis absent and lost.

(a) PostgreSQL: one `python -m horde serve` reaches a throwaway PostgreSQL database
    through a TCP proxy (tests/support/tcp_proxy.py). A worker is made online for the
    model by one native pop and never pops again, so requests queue and wait. The bench
    opens --streams streaming and --calls non-streamed /v1 calls, waits until all are
    queued, then cuts the proxy (drops every connection, refuses new ones). It prints how
    each open call ended and how long after the cut, what new calls get on /v1, /api/v2,
    /health and /ready, then resumes the proxy and prints how long until /ready is 200
    and a new request is served by a real worker.

(b) Redis: two server processes on PostgreSQL with HORDE_REDIS_URL naming a free port.
    A scripted worker long-polls process B; a client calls process A. --requests calls
    each with Redis absent, after starting a throwaway redis-server on that port, and
    after killing it; it prints the latency figures of each phase.

    .venv/bin/python bench/outage.py
    .venv/bin/python bench/outage.py --streams 7 --calls 7 --requests 10

The venv imports this checkout (scripts/setup.sh installs it with `pip install -e .`). To run the
bench of another checkout side by side with the same venv, run it from that checkout with
`PYTHONPATH=.` so its own `horde` is imported.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
import uuid

import _support as S
import requests

from horde.accounts import service as accounts
from horde.app import init_schema
from horde.chat.models import ChatRequestModel
from horde.config import Settings
from horde.runtime import Runtime
from tests.support.processes import Server, Worker, base_env, wait_until
from tests.support.redis_server import RedisServer
from tests.support.tcp_proxy import proxy_database

RULES = S.ROOT / "tests" / "e2e" / "rules.json"
SERVER_SETTINGS = {
    "HORDE_OAI_KEEPALIVE_S": 1,
    "HORDE_OAI_NO_WORKER_GRACE_S": 600,
    "HORDE_OAI_DROP_GRACE_S": 1,
    "HORDE_OAI_WAIT_BUDGET_S": 1_000_000,
    "HORDE_RATE_LIMIT_PER_MINUTE": 1_000_000,
}
DEADLINE_S = 60.0


def _user(runtime, trusted=False) -> str:
    with runtime.db.transaction() as session:
        return accounts.create_user(session, f"bench-{uuid.uuid4().hex[:8]}", kudos=1000, trusted=trusted)[1]


def _scripted_worker(server, key: str, model: str, env: dict) -> Worker:
    args = ["--backend", "scripted", "--rules", str(RULES), "--wait", "5"]
    return Worker(server, key, f"bench-{uuid.uuid4().hex[:6]}", [model], *args, env=env)


def _chat(url, key, text, model, stream=False, timeout=DEADLINE_S):
    return requests.post(
        url + "/v1/chat/completions",
        headers={"Authorization": f"Bearer {key}"},
        stream=stream,
        json={"model": model, "stream": stream, "messages": [{"role": "user", "content": text}]},
        timeout=timeout,
    )


def _stream_end(response, cut_at: list) -> tuple[str, float]:
    """How a stream ended (its last event), and when after the cut."""
    last = "cut without [DONE]"
    try:
        for line in response.iter_lines(decode_unicode=True):
            if line == "data: [DONE]":
                return last + " + [DONE]", time.monotonic() - cut_at[0]
            if line.startswith("data: "):
                payload = json.loads(line[6:])
                last = f"error event {payload['error']['code']}" if "error" in payload else "chunk"
    except requests.RequestException as exc:
        last = f"{type(exc).__name__} (connection cut)"
    return last, time.monotonic() - cut_at[0]


def database_outage(admin_url: str, streams: int, calls: int) -> None:
    database = S.PostgresBenchDatabase(admin_url)
    proxy, proxied_url = proxy_database(database.url)
    runtime = Runtime.build(Settings.from_env({}, database_url=database.url))
    init_schema(runtime)
    env = base_env(proxied_url, **SERVER_SETTINGS)
    server = Server(env)
    worker = None
    try:
        model = f"bench/outage-{uuid.uuid4().hex[:6]}"
        key = _user(runtime, trusted=True)
        requests.post(
            server.url + "/api/v2/generate/chat/pop",
            headers={"apikey": key},
            timeout=30,
            json={"name": f"hand-{model}", "models": [model], "max_length": 512, "max_context_length": 4096},
        )
        cut_at = [0.0]
        ends: list[tuple[str, float]] = []
        threads = []
        for index in range(streams):
            response = _chat(server.url, key, f"stream {index}", model, stream=True)
            threads.append(threading.Thread(target=lambda r=response: ends.append(_stream_end(r, cut_at))))
        for index in range(calls):

            def call(index=index):
                response = _chat(server.url, key, f"call {index}", model)
                code = response.json().get("error", {}).get("code") if response.status_code != 200 else "ok"
                ends.append(
                    (
                        f"HTTP {response.status_code} {code}, Retry-After {response.headers.get('Retry-After')}"
                        f", x-should-retry {response.headers.get('x-should-retry')}",
                        time.monotonic() - cut_at[0],
                    )
                )

            threads.append(threading.Thread(target=call))
        for thread in threads:
            thread.start()
        with runtime.db.read() as session:
            wait_until(
                lambda: session.query(ChatRequestModel).filter_by(model=model).count() == streams + calls,
                DEADLINE_S,
                "every call queued",
            )
        time.sleep(1.0)  # let the non-streamed calls reach their waiters
        cut_at[0] = time.monotonic()
        proxy.cut()
        for thread in threads:
            thread.join(DEADLINE_S)
        print(f"\n(a) PostgreSQL cut under {streams} open streams and {calls} waiting calls")
        outcomes: dict[str, list[float]] = {}
        for outcome, after_s in ends:
            outcomes.setdefault(outcome, []).append(after_s)
        print(
            S.table(
                ["open call ended with", "count", "max s after cut"],
                [[outcome, len(times), f"{max(times):.2f}"] for outcome, times in sorted(outcomes.items())],
            )
        )
        probes = [
            ("POST /v1/chat/completions", lambda: _chat(server.url, key, "during", model, timeout=10)),
            (
                "GET /v1/models",
                lambda: requests.get(server.url + "/v1/models", timeout=10, headers={"Authorization": f"Bearer {key}"}),
            ),
            (
                "POST /api/v2/generate/chat/async",
                lambda: requests.post(
                    server.url + "/api/v2/generate/chat/async",
                    headers={"apikey": key},
                    timeout=10,
                    json={"models": [model], "messages": [{"role": "user", "content": "during"}]},
                ),
            ),
            ("GET /health", lambda: requests.get(server.url + "/health", timeout=10)),
            ("GET /ready", lambda: requests.get(server.url + "/ready", timeout=10)),
        ]
        rows = []
        for name, probe in probes:
            started = time.monotonic()
            response = probe()
            rows.append(
                [
                    name,
                    response.status_code,
                    response.headers.get("Retry-After", "-"),
                    response.text.strip()[:90],
                    S.ms(time.monotonic() - started),
                ]
            )
        print("\nnew calls while PostgreSQL is unreachable")
        print(S.table(["call", "status", "Retry-After", "body", "ms"], rows))
        resumed_at = time.monotonic()
        proxy.resume()
        wait_until(lambda: requests.get(server.url + "/ready", timeout=10).status_code == 200, DEADLINE_S, "/ready")
        ready_s = time.monotonic() - resumed_at
        worker = _scripted_worker(server, key, model, env)
        reply = _chat(server.url, key, "after the outage", model)
        served_s = time.monotonic() - resumed_at
        print(
            f"\nafter resume: /ready 200 in {ready_s:.2f} s; a new request served ({reply.status_code}, "
            f"{reply.json()['choices'][0]['message']['content']!r}) {served_s:.2f} s after resume, no restart"
        )
    finally:
        if worker is not None:
            S.stop_and_remove_log(worker)
        S.stop_and_remove_log(server)
        proxy.close()
        runtime.close()
        database.drop()


def redis_outage(admin_url: str, count: int) -> None:
    database = S.PostgresBenchDatabase(admin_url)
    redis = RedisServer()
    runtime = Runtime.build(Settings.from_env({}, database_url=database.url))
    init_schema(runtime)
    env = base_env(
        database.url, HORDE_REDIS_URL=redis.url, HORDE_REDIS_PREFIX=f"bench_{uuid.uuid4().hex[:8]}", **SERVER_SETTINGS
    )
    front, back = Server(env), Server(env)
    model = f"bench/redis-{uuid.uuid4().hex[:6]}"
    worker = _scripted_worker(back, _user(runtime, trusted=True), model, env)
    key = _user(runtime)
    rows = []
    try:

        def phase(name: str) -> None:
            redis_state = requests.get(front.url + "/ready", timeout=10).json()["redis"]
            latencies = []
            for index in range(count):
                started = time.monotonic()
                response = _chat(front.url, key, f"{name} {index}", model)
                assert response.status_code == 200, response.text
                latencies.append(time.monotonic() - started)
            rows.append(
                [
                    name,
                    redis_state,
                    count,
                    S.ms(S.median(latencies)),
                    S.ms(S.percentile(latencies, 95)),
                    S.ms(max(latencies)),
                ]
            )

        phase("Redis absent at start")
        redis.start()
        wait_until(
            lambda: all(requests.get(s.url + "/ready", timeout=10).json()["redis"] == "ok" for s in (front, back)),
            DEADLINE_S,
            "Redis events",
        )
        phase("Redis started")
        redis.kill()
        wait_until(
            lambda: all(
                requests.get(s.url + "/ready", timeout=10).json()["redis"] == "unreachable" for s in (front, back)
            ),
            DEADLINE_S,
            "Redis loss noticed",
        )
        phase("Redis killed")
        print("\n(b) client calls process A, the worker long-polls process B (PostgreSQL)")
        print(S.table(["phase", "/ready redis", "requests", "median ms", "p95 ms", "max ms"], rows))
    finally:
        S.stop_and_remove_log(worker)
        S.stop_and_remove_log(front)
        S.stop_and_remove_log(back)
        redis.kill()
        runtime.close()
        database.drop()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--postgres", help="admin URL (default: HORDE_BENCH_DATABASE_URL or the local server)")
    parser.add_argument("--streams", type=int, default=7, help="(a) open streams (default 7)")
    parser.add_argument("--calls", type=int, default=7, help="(a) waiting non-streamed calls (default 7)")
    parser.add_argument("--requests", type=int, default=10, help="(b) requests per phase (default 10)")
    args = parser.parse_args(argv)
    admin_url, _ = S.postgres_admin_url(args.postgres)
    why = S.postgres_reachable(admin_url)
    if why:
        print(f"PostgreSQL is not reachable ({why}); both parts need it.")
        return 1
    database_outage(admin_url, args.streams, args.calls)
    redis_outage(admin_url, args.requests)
    return 0


if __name__ == "__main__":
    sys.exit(main())
