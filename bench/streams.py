"""Streams: how many waiting SSE streams one server process holds, and progress→chunk latency.

(a) One `python -m horde serve` on SQLite (HORDE_OAI_KEEPALIVE_S=1). A worker is made
    "online" for the model by one native pop and never pops again, so streamed requests
    queue and wait. The bench opens --streams levels (default 1,000 then 5,000 in all)
    concurrent streaming /v1/chat/completions requests from gevent greenlets on raw
    sockets, waits until every stream has had at least one keepalive comment, and reads
    the server's VmRSS before and after; then counts the keepalives that arrive in a 3 s
    window (ideal: 3 per stream). At the end it closes every stream and checks that the
    server still answers /health and cancels the abandoned requests.

(b) One streamed request served by a hand-driven worker: pop via HTTP, then 100 progress
    posts, each adding a short piece of text (<= 16 characters, so the front relays it as
    one chunk, unpaced). A reader thread timestamps each SSE chunk; the latency is from
    the start of the progress POST to the arrival of the chunk carrying its piece.

    .venv/bin/python bench/streams.py
    .venv/bin/python bench/streams.py --streams 200,500 --posts 30
"""

from __future__ import annotations

import argparse
import contextlib
import json
import resource
import sys
import threading
import time
import uuid

import _support as S
import gevent
import gevent.lock
import requests
from gevent import socket as gsocket
from sqlalchemy import func, select

from horde.accounts import service as accounts
from horde.app import init_schema
from horde.chat.models import ChatRequest, ChatRequestModel
from horde.config import Settings
from horde.runtime import Runtime
from tests.support.processes import Server, base_env

HOLD_MODEL = "bench/stream-hold"
LATENCY_MODEL = "bench/stream-latency"
KEEPALIVE_MARK = b": horde "
SERVER_SETTINGS = {
    "HORDE_OAI_KEEPALIVE_S": 1,
    "HORDE_OAI_NO_WORKER_GRACE_S": 600,
    "HORDE_RATE_LIMIT_PER_MINUTE": 1_000_000,
    # One worker thread and thousands queued: the fail_fast wait estimate would refuse them (503).
    "HORDE_OAI_WAIT_BUDGET_S": 1_000_000,
    "HORDE_OAI_DROP_GRACE_S": 1,
}


class Bench:
    def __init__(self, args):
        self.database = S.SqliteBenchDatabase("horde-bench-streams-")
        self.runtime = Runtime.build(Settings.from_env({}, database_url=self.database.url))
        init_schema(self.runtime)
        with self.runtime.db.transaction() as session:
            _, self.client_key = accounts.create_user(session, "bench-client", kudos=10_000_000)
            _, self.owner_key = accounts.create_user(session, "bench-owner", trusted=True)
        self.server = None
        try:
            self.server = Server(base_env(self.database.url, **SERVER_SETTINGS))
        except BaseException:
            self.close()
            raise
        self.url = self.server.url
        self.port = self.server.port

    def native_pop(self, name: str, model: str, wait: float = 0, features=()) -> dict:
        response = requests.post(
            self.url + "/api/v2/generate/chat/pop",
            headers={"apikey": self.owner_key},
            json={
                "name": name,
                "models": [model],
                "max_length": 512,
                "max_context_length": 4096,
                "threads": 1,
                "features": list(features),
                "wait": wait,
            },
            timeout=wait + 30,
        )
        response.raise_for_status()
        return response.json()

    def count_states(self, model: str) -> dict:
        with self.runtime.db.transaction() as session:
            rows = session.execute(
                select(ChatRequest.state, func.count())
                .join(ChatRequestModel, ChatRequestModel.request_id == ChatRequest.id)
                .where(ChatRequestModel.model == model)
                .group_by(ChatRequest.state)
            ).all()
        return dict(rows)

    def close(self) -> None:
        if self.server is not None:
            S.stop_and_remove_log(self.server)
        self.runtime.close()
        self.database.drop()


# -- (b) progress → chunk -------------------------------------------------------------


def progress_latency(bench: Bench, args) -> list:
    worker = f"bench-hand-worker-{uuid.uuid4().hex[:6]}"
    bench.native_pop(worker, LATENCY_MODEL)  # online, so that the request is admitted
    arrivals: dict[str, float] = {}
    arrived = threading.Condition()
    errors: list[str] = []
    body = {
        "model": LATENCY_MODEL,
        "messages": [{"role": "user", "content": "stream to me"}],
        "max_tokens": 512,
        "stream": True,
    }

    def reader():
        try:
            with requests.post(
                bench.url + "/v1/chat/completions",
                json=body,
                stream=True,
                timeout=120,
                headers={"Authorization": f"Bearer {bench.client_key}"},
            ) as response:
                if response.status_code != 200:
                    errors.append(f"HTTP {response.status_code}: {response.text[:300]}")
                    return
                buffer = b""
                for data in response.iter_content(chunk_size=None):
                    now = time.perf_counter()
                    buffer += data
                    while b"\n\n" in buffer:
                        event, buffer = buffer.split(b"\n\n", 1)
                        if not event.startswith(b"data: ") or event == b"data: [DONE]":
                            continue
                        chunk = json.loads(event[6:])
                        for choice in chunk.get("choices") or ():
                            piece = (choice.get("delta") or {}).get("content")
                            if piece:
                                with arrived:
                                    arrivals[piece] = now
                                    arrived.notify_all()
        except Exception as exc:  # reported by the main thread
            errors.append(f"{type(exc).__name__}: {exc}")
        finally:
            with arrived:
                arrived.notify_all()

    thread = threading.Thread(target=reader, daemon=True)
    thread.start()
    job = bench.native_pop(worker, LATENCY_MODEL, wait=10)
    if not job.get("id"):
        raise RuntimeError(f"the hand-driven worker got no job: {job} {errors}")
    session = requests.Session()
    session.headers.update({"apikey": bench.owner_key})
    content, latencies, round_trips, lost = "", [], [], 0
    for index in range(args.posts):
        piece = f"p{index:03d} "
        content += piece
        started = time.perf_counter()
        answer = session.post(
            bench.url + "/api/v2/generate/chat/progress", json={"id": job["id"], "content": content}, timeout=30
        )
        round_trips.append(time.perf_counter() - started)
        if answer.status_code != 200 or answer.json().get("cancel"):
            raise RuntimeError(f"progress refused: HTTP {answer.status_code} {answer.text[:200]}")
        with arrived:
            arrived.wait_for(lambda piece=piece: piece in arrivals or errors, timeout=3)
        if piece in arrivals:
            latencies.append(arrivals[piece] - started)
        else:
            lost += 1
        time.sleep(args.post_gap_ms / 1000)
    submit = session.post(
        bench.url + "/api/v2/generate/chat/submit",
        timeout=30,
        json={"id": job["id"], "content": content, "finish_reason": "stop"},
    )
    submit.raise_for_status()
    thread.join(30)
    if errors:
        raise RuntimeError("the stream reader failed: " + "; ".join(errors))
    print(
        f"(b) progress post → SSE chunk, one stream, {args.posts} posts of one short piece each "
        f"({args.post_gap_ms:g} ms apart after the chunk arrived)"
    )
    print(
        S.table(
            ["measure", "n", "median ms", "p99 ms", "max ms"],
            [
                [
                    "post start → chunk received",
                    len(latencies),
                    S.ms(S.median(latencies)),
                    S.ms(S.percentile(latencies, 99)),
                    S.ms(max(latencies) if latencies else float("nan")),
                ],
                [
                    "progress POST round trip",
                    len(round_trips),
                    S.ms(S.median(round_trips)),
                    S.ms(S.percentile(round_trips, 99)),
                    S.ms(max(round_trips)),
                ],
            ],
        )
    )
    if lost:
        print(f"   {lost} piece(s) never arrived as their own chunk within 3 s")
    return latencies


# -- (a) many waiting streams ---------------------------------------------------------


class Stream:
    __slots__ = ("closed", "error", "index", "keepalives", "opened_at", "sock", "status")

    def __init__(self, index: int):
        self.index = index
        self.sock = None
        self.status = None
        self.error = None
        self.keepalives: list[float] = []
        self.opened_at = None
        self.closed = False


def hold_stream(stream: Stream, port: int, key: str, opening: gevent.lock.Semaphore) -> None:
    body = json.dumps(
        {
            "model": HOLD_MODEL,
            "messages": [{"role": "user", "content": f"hold #{stream.index}"}],
            "max_tokens": 64,
            "stream": True,
        }
    ).encode()
    head = (
        f"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {key}\r\n"
        f"Content-Type: application/json\r\nAccept: text/event-stream\r\nUser-Agent: bench-streams\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode()
    released = False
    opening.acquire()
    try:
        sock = gsocket.create_connection(("127.0.0.1", port), timeout=120)
        stream.sock = sock
        sock.sendall(head + body)
        buffer = b""
        while b"\r\n\r\n" not in buffer:
            data = sock.recv(65536)
            if not data:
                raise ConnectionError("closed before the response headers")
            buffer += data
        status_line, _, _rest = buffer.partition(b"\r\n")
        stream.status = int(status_line.split()[1])
        header_block, _, buffer = buffer.partition(b"\r\n\r\n")
        if stream.status != 200:
            stream.error = (header_block + b"\r\n\r\n" + buffer)[-300:].decode(errors="replace")
            return
        stream.opened_at = time.monotonic()
        opening.release()
        released = True
        sock.settimeout(None)
        tail = buffer
        stream.keepalives.extend([time.monotonic()] * tail.count(KEEPALIVE_MARK))
        tail = tail[-(len(KEEPALIVE_MARK) - 1) :]
        while not stream.closed:
            data = sock.recv(65536)
            if not data:
                break
            window = tail + data
            found = window.count(KEEPALIVE_MARK)
            if found:
                now = time.monotonic()
                stream.keepalives.extend([now] * found)
            tail = window[-(len(KEEPALIVE_MARK) - 1) :]
    except Exception as exc:
        if not stream.closed:
            stream.error = f"{type(exc).__name__}: {exc}"
    finally:
        if not released:
            opening.release()


def open_streams(streams: list[Stream], port: int, key: str, concurrency: int) -> list:
    opening = gevent.lock.Semaphore(concurrency)
    return [gevent.spawn(hold_stream, stream, port, key, opening) for stream in streams]


def wait_all_keepalive(streams: list[Stream], timeout_s: float) -> tuple[float, int]:
    """Seconds until every stream that opened has had a keepalive (or failed); (elapsed, still waiting)."""
    started = time.monotonic()
    while True:
        pending = sum(1 for s in streams if s.error is None and not s.keepalives)
        if not pending:
            return time.monotonic() - started, 0
        if time.monotonic() - started > timeout_s:
            return time.monotonic() - started, pending
        gevent.sleep(0.2)


def health_ms(port: int) -> float:
    started = time.perf_counter()
    sock = gsocket.create_connection(("127.0.0.1", port), timeout=60)
    try:
        sock.sendall(f"GET /health HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n".encode())
        data = b""
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    finally:
        sock.close()
    if not data.startswith(b"HTTP/1.1 200") or b'"ok"' not in data:
        raise RuntimeError(f"/health answered {data[:200]!r}")
    return (time.perf_counter() - started) * 1000


def own_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def hold_many(bench: Bench, args) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = max(levels := [int(v) for v in args.streams.split(",") if v]) + 200
    if soft < target:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(target, soft)), hard))
    pid = bench.server.popen.pid
    bench.native_pop(f"bench-idle-worker-{uuid.uuid4().hex[:6]}", HOLD_MODEL)  # online for 300 s, never pops again

    # Warm-up: a few streams through every code path, then closed.
    warm = [Stream(-i - 1) for i in range(10)]
    greenlets = open_streams(warm, bench.port, bench.client_key, args.open_concurrency)
    wait_all_keepalive(warm, 30)
    for stream in warm:
        stream.closed = True
        if stream.sock is not None:
            stream.sock.close()
    gevent.joinall(greenlets, timeout=10)
    gevent.sleep(3)
    baseline = S.rss_kib(pid)
    S.log(f"(a) server pid {pid}: baseline VmRSS {baseline} KiB")

    rows, streams, all_greenlets = [], [], []
    for level in levels:
        new = [Stream(len(streams) + i) for i in range(level - len(streams))]
        streams += new
        open_started = time.monotonic()
        all_greenlets += open_streams(new, bench.port, bench.client_key, args.open_concurrency)
        # All connections answered (200 or error), then all keepalive'd.
        deadline = open_started + args.settle_timeout
        while time.monotonic() < deadline and any(s.status is None and s.error is None for s in new):
            gevent.sleep(0.2)
        open_s = time.monotonic() - open_started
        settle_s, pending = wait_all_keepalive(streams, max(1.0, deadline - time.monotonic()))
        held = sum(1 for s in streams if s.status == 200 and s.error is None)
        failed = [s for s in streams if s.error is not None]
        rss = S.rss_kib(pid)
        connections = sum(1 for s in streams if s.sock is not None and s.error is None)
        window_start, cpu_start, own_start = time.monotonic(), S.cpu_seconds(pid), own_cpu()
        gevent.sleep(args.window)
        window_end, cpu_end, own_end = time.monotonic(), S.cpu_seconds(pid), own_cpu()
        in_window = sum(1 for s in streams for t in s.keepalives if window_start <= t < window_end)
        rss_after_window = S.rss_kib(pid)
        S.log(
            f"(a) {level}: opened in {open_s:.1f} s, all keepalive'd after {open_s + settle_s:.1f} s, "
            f"pending {pending}, failed {len(failed)}" + (f" (e.g. {failed[0].error[:200]!r})" if failed else "")
        )
        delta = max(rss, rss_after_window) - baseline
        rows.append(
            [
                level,
                held,
                len(failed),
                pending,
                f"{open_s:.1f}",
                f"{open_s + settle_s:.1f}",
                f"{delta / 1024:.1f}",
                f"{delta / max(1, held):.1f}",
                f"{delta / max(1, connections):.1f}",
                in_window,
                f"{in_window / max(1, held) / args.window:.2f}",
                f"{100 * (cpu_end - cpu_start) / (window_end - window_start):.0f}",
                f"{100 * (own_end - own_start) / (window_end - window_start):.0f}",
            ]
        )
        if pending and args.stop_when_starved:
            S.log(f"(a) {pending} streams had no keepalive after {args.settle_timeout} s: not going higher")
            break

    print(
        f"(a) waiting streams held by one server process (SQLite, HORDE_OAI_KEEPALIVE_S=1), "
        f"baseline VmRSS {baseline / 1024:.1f} MiB; keepalives counted over a {args.window:g} s window"
    )
    print(
        S.table(
            [
                "streams",
                "held",
                "failed",
                "no keepalive",
                "open s",
                "all kept-alive s",
                "RSS Δ MiB",
                "KiB/held",
                "KiB/conn",
                f"keepalives in {args.window:g}s",
                "per held per s",
                "server CPU %",
                "client CPU %",
            ],
            rows,
        )
    )
    print(
        "   held: answered 200 and streaming; no keepalive: connected (or connecting) but no keepalive within "
        f"{args.settle_timeout:g} s of the level's start; KiB/conn divides the RSS growth by every open connection"
    )

    # Close everything; the server must notice, cancel, and keep answering.
    closed_at = time.monotonic()
    for stream in streams:
        stream.closed = True
        if stream.sock is not None:
            with contextlib.suppress(OSError):
                stream.sock.close()
    gevent.joinall(all_greenlets, timeout=30)
    first_health = health_ms(bench.port)
    waiting = None
    drained_s = None
    while time.monotonic() - closed_at < args.drain_timeout:
        states = bench.count_states(HOLD_MODEL)
        waiting = states.get("waiting", 0)
        if waiting == 0:
            drained_s = time.monotonic() - closed_at
            break
        gevent.sleep(1)
    later_health = health_ms(bench.port)
    states = bench.count_states(HOLD_MODEL)
    print(
        f"after closing all {len(streams)} streams: /health answered 200 in {first_health:.1f} ms at once and "
        f"{later_health:.1f} ms later; requests still waiting: {states.get('waiting', 0)}"
        + (
            f" (all cancelled {drained_s:.1f} s after the close)"
            if drained_s is not None
            else f" after {args.drain_timeout:g} s"
        )
        + f"; states {states}"
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--streams", default="1000,5000", help="cumulative stream counts to hold, comma-separated (default 1000,5000)"
    )
    parser.add_argument(
        "--open-concurrency", type=int, default=200, help="connections being opened at once (default 200)"
    )
    parser.add_argument(
        "--settle-timeout",
        type=float,
        default=60,
        help="seconds per level for all streams to open and get a keepalive (default 60)",
    )
    parser.add_argument("--window", type=float, default=3, help="keepalive counting window, s (default 3)")
    parser.add_argument(
        "--drain-timeout",
        type=float,
        default=20,
        help="seconds to wait for the server to cancel the closed streams (default 20)",
    )
    parser.add_argument(
        "--stop-when-starved", action="store_true", help="skip higher levels when some streams got no keepalive in time"
    )
    parser.add_argument("--posts", type=int, default=100, help="(b) progress posts (default 100)")
    parser.add_argument("--post-gap-ms", type=float, default=20, help="(b) pause between posts (default 20)")
    parser.add_argument("--skip-hold", action="store_true", help="skip (a)")
    parser.add_argument("--skip-latency", action="store_true", help="skip (b)")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    bench = Bench(args)
    try:
        if not args.skip_latency:
            progress_latency(bench, args)
            print()
        if not args.skip_hold:
            hold_many(bench, args)
    finally:
        bench.close()
    print(f"total {time.perf_counter() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
