"""Load: clients through /v1 and workers over the native protocol at once, against a real server.

The server is `gunicorn -k horde.gunicorn_worker.HordeWorker -w N 'horde.wsgi:app'` on PostgreSQL + Redis
(the README's production command; `--worker-class gevent` runs gunicorn's own gevent worker instead), or
`python -m horde serve` on SQLite. In this process, on gevent: W workers × T slots, each slot popping
(long-poll) and submitting a short reply at once; C clients sending /v1/chat/completions in a loop, a chosen share of
them streamed (closed loop: the throughput it reaches, with latency that is mostly the
queue the C clients keep full); or, with --rate R, requests arriving R per second
whatever the answers do, on at most C connections (open loop: the latency at that
load; an arrival that finds all C busy is counted as missed). After a warm-up, D
seconds are measured; then the clients stop, the requests in flight finish, and the
workers stop.

Each server is measured twice, on a fresh database each time: with slots that pop and then submit (two
calls per job), then with slots whose submit carries the next pop (one call per job while the queue is
not empty; `--no-submit-pop` skips that row).

Printed: completed requests/s; latency p50 and p99 for JSON and for streamed
requests; the server's CPU ms per completed request (/proc, every server process); on PostgreSQL the
database transactions per completed request (its statistics; an autocommit statement counts as one) and,
when PostgreSQL runs on this machine, its CPU ms per completed request (/proc, the backends serving the
bench's database);
the count of 5xx answers; requests not in a final state after the run; and whether
every balance equals the sum of its ledger entries (and no request was charged
twice). With --check the exit code is 1 when any of those counts is wrong (never a
timing): a smoke test for CI. With --history N the fresh database first gets N finished requests with their
jobs and kudos entries (bench/_history.py), so that a read that walks the Horde's past shows in the figures.

    .venv/bin/python bench/load.py                       # PostgreSQL + Redis (2 processes), then SQLite
    .venv/bin/python bench/load.py --backend sqlite -c 64 -w 8 -t 4 -d 20
    .venv/bin/python bench/load.py --backend postgresql -d 4 --stream-share 0.5 --check
    .venv/bin/python bench/load.py --backend postgresql --rate 100 -c 256    # p50 at 100 requests/s offered
    .venv/bin/python bench/load.py --backend postgresql --history 300000     # on an old Horde's tables
    .venv/bin/python bench/load.py --backend postgresql --pgbouncer          # through pgbouncer, transaction mode
    .venv/bin/python bench/load.py --backend sqlite --sqlite-processes 2     # gunicorn -w 2 on SQLite, no Redis

With --pgbouncer the servers reach PostgreSQL through Debian's pgbouncer in transaction mode, running the
configuration docs/how-to/production.md gives (tests/support/pgbouncer.py), with HORDE_DATABASE_POOLER set as
--pooler-setting says (`unset` runs the code as it runs without the setting: what the pooler breaks; pgbouncer
then ignores the startup options it would refuse). --pooler-setting transaction without --pgbouncer measures what
the setting costs straight to PostgreSQL. The bench's own reads and checks go to PostgreSQL directly.
With --sqlite-processes N (N > 1) the SQLite server is
`gunicorn -k horde.gunicorn_worker.HordeWorker -w N` on the one SQLite file, without Redis: processes that share a
database and hear each other only through it.

The venv imports this checkout (scripts/setup.sh installs it with `pip install -e .`). To run the
bench of another checkout side by side with the same venv, run it from that checkout with
`PYTHONPATH=.` so its own `horde` is imported.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import sys
import time
import uuid

import _history
import _support as S
import gevent
import gevent.event
import gevent.pool
import gevent.queue
from _http import Connection
from sqlalchemy import func, select

from horde.accounts import service as accounts
from horde.accounts.models import KudosEntry, User
from horde.app import init_schema
from horde.chat.models import FINAL_STATES, ChatRequest
from horde.config import Settings
from horde.runtime import Runtime
from tests.support.pgbouncer import PGBOUNCER, PgBouncer
from tests.support.processes import Gunicorn, Server, base_env

MODEL = "bench/load-model"
HORDE_WORKER_CLASS = "horde.gunicorn_worker.HordeWorker"
WORKER_NAME_PREFIX = "bench-load-"
#: gunicorn's -k values this bench runs, with the short name its table prints.
WORKER_CLASS_NAMES = {HORDE_WORKER_CLASS: "HordeWorker", "gevent": "gevent"}
REDIS_ENV = "HORDE_BENCH_REDIS_URL"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"
SERVER_SETTINGS = {
    "HORDE_RATE_LIMIT_PER_MINUTE": 1_000_000_000,
    "HORDE_OAI_WAIT_BUDGET_S": 3600,  # a deep queue is the point here, not a fail_fast refusal
}
REPLY = "The bench worker's short answer."
REQUEST_TIMEOUT_S = 120.0
#: How the worker slots take their jobs, by whether a submit carries the next pop: the two rows per server.
MODES = {False: "pop, then submit", True: "submit with pop"}
DRAIN_TIMEOUT_S = 60.0


class Record:
    """What one side of the load saw: answers by status, latencies of completed requests."""

    def __init__(self):
        self.statuses: dict[int, int] = {}
        self.errors: list[str] = []
        self.json_s: list[float] = []
        self.stream_s: list[float] = []
        self.window_completed = 0
        self.completed = 0  # over the whole run, warm-up and drain included
        self.jobs = 0
        self.missed = 0  # open loop: arrivals that found every connection busy, inside the window

    def status(self, code: int) -> None:
        self.statuses[code] = self.statuses.get(code, 0) + 1

    @property
    def server_errors(self) -> int:
        return sum(count for code, count in self.statuses.items() if code >= 500)


class Window:
    """The measured interval: completions count, and latencies are kept, only inside it."""

    def __init__(self):
        self.start = self.end = None

    def holds(self, moment: float) -> bool:
        return self.start is not None and self.start <= moment and (self.end is None or moment <= self.end)


# -- servers ------------------------------------------------------------------------------


def server_pids(server) -> list[int]:
    """Every server process: gunicorn's master and its workers, or the one `python -m horde serve`."""
    return [server.popen.pid] + (server.worker_pids() if isinstance(server, Gunicorn) else [])


def cpu_of(pids) -> dict[int, float]:
    seconds = {}
    for pid in pids:
        with contextlib.suppress(OSError):  # a process that exited meanwhile
            seconds[pid] = S.cpu_seconds(pid)
    return seconds


# -- load ---------------------------------------------------------------------------------


def worker_slot(port: int, key: str, name: str, slots: int, submit_pop: bool, args, record: Record, stopping) -> None:
    """Pop (long-poll), submit, again. With `submit_pop` each submit carries the next pop, and the slot
    pops on its own only when a submit brought no job. A job in hand is always submitted, even when stopping."""
    conn = Connection("127.0.0.1", port, REQUEST_TIMEOUT_S)
    headers = {"apikey": key}
    pop = {
        "name": name,
        "models": [MODEL],
        "max_length": 512,
        "max_context_length": 4096,
        "threads": slots,
        "bridge_agent": "bench:1:load",
        "wait": args.pop_wait,
    }
    job_id = None
    while job_id is not None or not stopping.is_set():
        try:
            if job_id is None:
                status, body = conn.request("POST", "/api/v2/generate/chat/pop", headers, pop)
                record.status(status)
                if status != 200:
                    record.errors.append(f"pop: HTTP {status} {body[:200]!r}")
                    gevent.sleep(0.5)
                    continue
                job_id = json.loads(body).get("id")
                if job_id is None:
                    continue
            reply = {"id": job_id, "content": REPLY, "finish_reason": "stop"}
            if submit_pop and not stopping.is_set():
                reply["pop"] = pop
            job_id = None
            status, body = conn.request("POST", "/api/v2/generate/chat/submit", headers, reply)
            record.status(status)
            record.jobs += 1
            if status != 200:
                record.errors.append(f"submit: HTTP {status} {body[:200]!r}")
                continue
            job_id = (json.loads(body).get("next") or {}).get("id")
        except Exception as exc:  # counted and shown; the slot goes on
            record.errors.append(f"worker: {type(exc).__name__}: {exc}")
            conn.close()
            gevent.sleep(0.5)


def client(port: int, key: str, index: int, streamed: bool, args, record: Record, window: Window, stopping) -> None:
    """Closed loop: the next request leaves as soon as the last one is answered."""
    conn = Connection("127.0.0.1", port, REQUEST_TIMEOUT_S)
    headers = _client_headers(key)
    sent = 0
    while not stopping.is_set():
        sent += 1
        if not send_one(
            conn, headers, f"{index} asks question {sent}", streamed, time.monotonic(), args, record, window
        ):
            gevent.sleep(0.5)


def arrivals(port: int, keys: list[str], args, record: Record, window: Window, stopping) -> None:
    """Open loop: requests arrive at --rate per second whatever the answers do (exponential gaps, seeded),
    each sent on an idle connection, at most --clients in flight. An arrival that finds every connection busy
    is counted as missed: the server did not keep up with the rate. A latency runs from the arrival, so a
    dispatch that falls behind its schedule is counted against the server too, never hidden."""
    rng = random.Random(args.seed)
    idle: gevent.queue.Queue = gevent.queue.Queue()
    for index in range(args.clients):
        idle.put((Connection("127.0.0.1", port, REQUEST_TIMEOUT_S), _client_headers(keys[index % len(keys)])))
    in_flight = gevent.pool.Group()
    arrival, sent = time.monotonic(), 0
    while not stopping.is_set():
        arrival += rng.expovariate(args.rate)
        gevent.sleep(max(0.0, arrival - time.monotonic()))
        sent += 1
        streamed = rng.random() < args.stream_share
        try:
            connection = idle.get_nowait()
        except gevent.queue.Empty:
            if window.holds(arrival):
                record.missed += 1
            continue
        in_flight.spawn(
            _send_and_give_back, connection, idle, f"arrival {sent}", streamed, arrival, args, record, window
        )
    in_flight.join(timeout=DRAIN_TIMEOUT_S)


def _send_and_give_back(connection, idle, question, streamed, arrival, args, record, window) -> None:
    conn, headers = connection
    try:
        send_one(conn, headers, question, streamed, arrival, args, record, window)
    finally:
        idle.put(connection)


def _client_headers(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}", "User-Agent": "bench-load"}


def send_one(
    conn, headers, question: str, streamed: bool, started: float, args, record: Record, window: Window
) -> bool:
    """One /v1/chat/completions, its latency from `started`; False when the connection failed."""
    body = {
        "model": MODEL,
        "max_tokens": args.max_tokens,
        "stream": streamed,
        "messages": [{"role": "user", "content": f"Client {question}."}],
    }
    try:
        status, answer = conn.request("POST", "/v1/chat/completions", headers, body)
    except Exception as exc:
        record.errors.append(f"client: {type(exc).__name__}: {exc}")
        conn.close()
        return False
    ended = time.monotonic()
    record.status(status)
    complete = status == 200 and (
        answer.rstrip().endswith(b"data: [DONE]") and b'"error"' not in answer if streamed else b'"choices"' in answer
    )
    if not complete:
        record.errors.append(f"client: HTTP {status} {answer[-300:]!r}")
        return True
    record.completed += 1
    if window.holds(ended):
        record.window_completed += 1
        (record.stream_s if streamed else record.json_s).append(ended - started)
    return True


# -- checks -------------------------------------------------------------------------------


def final_counts(runtime) -> dict:
    """Requests not in a final state, balances that differ from their ledger, requests charged twice."""
    with runtime.db.read() as session:
        unfinished = session.scalar(select(func.count()).where(ChatRequest.state.not_in(FINAL_STATES))) or 0
        ledger = (
            select(KudosEntry.user_id, func.sum(KudosEntry.amount).label("total"))
            .group_by(KudosEntry.user_id)
            .subquery()
        )
        mismatched = (
            session.scalar(
                select(func.count())
                .select_from(User)
                .outerjoin(ledger, ledger.c.user_id == User.id)
                .where(User.kudos != func.coalesce(ledger.c.total, 0))
            )
            or 0
        )
        charges = (
            select(KudosEntry.request_id)
            .where(KudosEntry.kind == "charge")
            .group_by(KudosEntry.request_id)
            .having(func.count() > 1)
            .subquery()
        )
        double_charged = session.scalar(select(func.count()).select_from(charges)) or 0
        by_state = dict(session.execute(select(ChatRequest.state, func.count()).group_by(ChatRequest.state)).all())
    return {"unfinished": unfinished, "mismatched": mismatched, "double_charged": double_charged, "by_state": by_state}


# -- one run ------------------------------------------------------------------------------


class Setup:
    """A fresh database with its users, and the server on it."""

    def __init__(self, backend: str, args):
        self.backend = backend
        self.server = None
        self.runtime = None
        self.pgbouncer = None
        if backend == "postgresql":
            self.database = S.PostgresBenchDatabase(args.admin_url, prefix="horde_bench_load")
        else:
            self.database = S.SqliteBenchDatabase("horde-bench-load-")
        try:
            self.runtime = Runtime.build(Settings.from_env({}, database_url=self.database.url))
            init_schema(self.runtime)
            with self.runtime.db.transaction() as session:
                tag = uuid.uuid4().hex[:6]
                clients = [
                    accounts.create_user(session, f"bench-client-{tag}-{index}", kudos=10_000_000)
                    for index in range(args.users)
                ]
                self.client_keys = [key for _, key in clients]
                owner, self.owner_key = accounts.create_user(session, f"bench-owner-{tag}", trusted=True)
                client_ids, owner_id = [user.id for user, _ in clients], owner.id
            if args.history:
                started = time.monotonic()
                _history.fill(self.runtime, args.history, client_ids, owner_id)
                if backend == "postgresql":
                    analyze(self.runtime)
                S.log(f"{backend}: {args.history} past requests written in {time.monotonic() - started:.1f} s")
            settings = dict(SERVER_SETTINGS)
            if backend == "postgresql":
                settings.update(HORDE_REDIS_URL=args.redis_url, HORDE_REDIS_PREFIX=f"horde_bench_{tag}")
                server_url = self.database.url
                if args.pgbouncer:
                    # Without the setting the walking pool's sessions send startup options, which pgbouncer refuses
                    # unless told to ignore them (what an operator does to connect at all: then it drops them).
                    ignored = {} if args.pooler_setting == "transaction" else {"ignore_startup_parameters": "options"}
                    self.pgbouncer = PgBouncer(args.admin_url, extra=ignored)
                    server_url = self.pgbouncer.url_for(self.database.url)
                if args.pooler_setting != "unset":
                    settings["HORDE_DATABASE_POOLER"] = args.pooler_setting
                self.server = Gunicorn(base_env(server_url, **settings), args.processes, worker_class=args.worker_class)
            elif args.sqlite_processes > 1:
                self.server = Gunicorn(
                    base_env(self.database.url, **settings), args.sqlite_processes, worker_class=args.worker_class
                )
            else:
                self.server = Server(base_env(self.database.url, **settings))
        except BaseException:
            self.close()
            raise

    def describe(self, args) -> str:
        if self.backend == "postgresql":
            described = f"gunicorn -k {WORKER_CLASS_NAMES[args.worker_class]} -w {args.processes}, PostgreSQL + Redis"
            if args.pgbouncer:
                described += " through pgbouncer (transaction mode)"
            if args.pgbouncer or args.pooler_setting != "unset":
                described += f", HORDE_DATABASE_POOLER {args.pooler_setting}"
            return described
        if args.sqlite_processes > 1:
            return f"gunicorn -k {WORKER_CLASS_NAMES[args.worker_class]} -w {args.sqlite_processes}, SQLite, no Redis"
        return "python -m horde serve, SQLite"

    def close(self, keep_log: bool = False) -> None:
        if self.server is not None:
            if keep_log:
                self.server.stop()
                S.log(f"{self.backend}: the server's log is kept in {self.server.log.name}")
            else:
                S.stop_and_remove_log(self.server)
        if self.runtime is not None:
            self.runtime.close()
        if self.pgbouncer is not None:
            self.pgbouncer.stop()
        self.database.drop()


def run(backend: str, submit_pop: bool, args) -> tuple[list, bool]:
    """One load run on a fresh database and server; (table row, whether every count is right)."""
    setup = Setup(backend, args)
    row, ok = None, False
    try:
        row, ok = measure(setup, submit_pop, args)
        return row, ok
    finally:
        setup.close(keep_log=args.keep_log or not ok)


def measure(setup: Setup, submit_pop: bool, args) -> tuple[list, bool]:
    port = setup.server.port
    stop_workers, stop_clients = gevent.event.Event(), gevent.event.Event()
    workers, clients, window = Record(), Record(), Window()
    slots = [
        gevent.spawn(
            worker_slot,
            port,
            setup.owner_key,
            f"{WORKER_NAME_PREFIX}{index}",
            args.slots,
            submit_pop,
            args,
            workers,
            stop_workers,
        )
        for index in range(args.workers)
        for _ in range(args.slots)
    ]
    deadline = time.monotonic() + 30
    while _online(setup.runtime) < args.workers:  # gevent.sleep: the slots run meanwhile
        if time.monotonic() > deadline:
            raise RuntimeError(f"the workers did not pop within 30 s: {workers.errors[:3]}")
        gevent.sleep(0.1)
    if args.rate:
        callers = [
            gevent.spawn(arrivals, port, setup.client_keys, args, clients, window, stop_clients),
        ]
    else:
        rng = random.Random(args.seed)
        streamed = [False] * args.clients
        for index in rng.sample(range(args.clients), round(args.clients * args.stream_share)):
            streamed[index] = True
        callers = [
            gevent.spawn(
                client,
                port,
                setup.client_keys[index % len(setup.client_keys)],
                index,
                streamed[index],
                args,
                clients,
                window,
                stop_clients,
            )
            for index in range(args.clients)
        ]
    gevent.sleep(args.warmup)
    if setup.backend == "postgresql" and not args.fresh_statistics:
        analyze(setup.runtime)
    pids = server_pids(setup.server)
    cpu_before, own_before = cpu_of(pids), S.cpu_seconds(os.getpid())
    xacts_before = database_transactions(setup.runtime)
    backends = S.database_backends(setup.runtime)
    database_cpu_before = cpu_of(backends)
    window.start = time.monotonic()
    gevent.sleep(args.duration)
    window.end = time.monotonic()
    cpu_after, own_after = cpu_of(server_pids(setup.server)), S.cpu_seconds(os.getpid())
    xacts_after = database_transactions(setup.runtime)
    database_cpu_after = cpu_of(backends)
    elapsed = window.end - window.start
    stop_clients.set()
    gevent.joinall(callers, timeout=DRAIN_TIMEOUT_S)
    stop_workers.set()
    gevent.joinall(slots, timeout=args.pop_wait + 30)
    gevent.killall([greenlet for greenlet in callers + slots if not greenlet.dead])
    counts = final_counts(setup.runtime)

    server_cpu = sum(cpu_after.get(p, 0) - cpu_before.get(p, 0) for p in cpu_before)
    database_cpu = sum(database_cpu_after.get(p, 0) - database_cpu_before.get(p, 0) for p in database_cpu_before)
    completed = clients.window_completed
    fivexx = clients.server_errors + workers.server_errors
    errors = clients.errors + workers.errors
    S.log(
        f"{setup.backend}, {MODES[submit_pop]}: {completed} completed in {elapsed:.1f} s; jobs {workers.jobs}; "
        f"client statuses "
        f"{dict(sorted(clients.statuses.items()))}; worker statuses {dict(sorted(workers.statuses.items()))}; "
        f"requests by state {counts['by_state']}"
    )
    for error in errors[:5]:
        S.log(f"  e.g. {error[:300]}")
    ok = (
        fivexx == 0
        and counts["unfinished"] == 0
        and counts["mismatched"] == 0
        and counts["double_charged"] == 0
        and clients.completed > 0  # a count over the whole run: a slow machine may finish none inside the window
    )
    row = [
        f"{setup.describe(args)}; {MODES[submit_pop]}" + (f"; {args.history:,} past requests" if args.history else ""),
        f"{args.rate:g}" if args.rate else "closed loop",
        completed,
        f"{completed / elapsed:.1f}",
        clients.missed if args.rate else "-",
        S.ms(S.median(clients.json_s)),
        S.ms(S.percentile(clients.json_s, 99)),
        S.ms(S.median(clients.stream_s)),
        S.ms(S.percentile(clients.stream_s, 99)),
        f"{1000 * server_cpu / completed:.2f}" if completed else "-",
        f"{(xacts_after - xacts_before) / completed:.1f}" if completed and xacts_before is not None else "-",
        f"{1000 * database_cpu / completed:.2f}" if completed and database_cpu_before else "-",
        f"{100 * (own_after - own_before) / elapsed:.0f}",
        fivexx,
        len(errors),
        counts["unfinished"],
        "yes" if counts["mismatched"] == 0 else f"NO ({counts['mismatched']} users)",
        counts["double_charged"],
    ]
    return row, ok


def analyze(runtime) -> None:
    """Give PostgreSQL the statistics of the warm-up's rows, as its autovacuum does within a minute of a server's
    start: a production database is never planned as the empty tables of a fresh one."""
    with runtime.db.autocommit() as session:
        session.connection().exec_driver_sql("ANALYZE")


def database_transactions(runtime) -> int | None:
    """PostgreSQL: transactions its statistics counted in the bench's database so far (an autocommit statement
    is one), or None on SQLite. Backends report them at most once a second, so a window's count is off by
    up to a second's worth at each end: a figure to compare between runs, not an exact count."""
    if not runtime.db.is_postgresql:
        return None
    with runtime.db.read() as session:
        return (
            session.connection()
            .exec_driver_sql(
                "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = current_database()"
            )
            .scalar_one()
        )


def _online(runtime) -> int:
    """The bench's workers that have checked in (a history's retired workers are not among them)."""
    from horde.workers.models import Worker

    with runtime.db.read() as session:
        return session.scalar(select(func.count(Worker.id)).where(Worker.name.like(f"{WORKER_NAME_PREFIX}%"))) or 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--backend",
        choices=("postgresql", "sqlite", "both"),
        default="both",
        help="postgresql: gunicorn on PostgreSQL + Redis; sqlite: python -m horde serve (default both)",
    )
    parser.add_argument("-p", "--processes", type=int, default=2, help="gunicorn processes (default 2)")
    parser.add_argument(
        "--worker-class",
        choices=sorted(WORKER_CLASS_NAMES),
        default=HORDE_WORKER_CLASS,
        help="gunicorn's worker class (default: the README's, the Horde's gevent worker)",
    )
    parser.add_argument("-w", "--workers", type=int, default=8, help="workers (default 8)")
    parser.add_argument("-t", "--slots", type=int, default=4, help="slots (threads) per worker (default 4)")
    parser.add_argument(
        "-c",
        "--clients",
        type=int,
        default=64,
        help="clients through /v1; with --rate, the most in flight (default 64)",
    )
    parser.add_argument(
        "--rate",
        type=float,
        default=0,
        help="open loop: requests arriving per second, whatever the answers do (default 0: closed loop, each "
        "client sends again when answered)",
    )
    parser.add_argument(
        "--stream-share", type=float, default=0.0, help="share of the clients that stream, 0..1 (default 0)"
    )
    parser.add_argument("-d", "--duration", type=float, default=15, help="measured seconds (default 15)")
    parser.add_argument("--warmup", type=float, default=2, help="seconds of load before measuring (default 2)")
    parser.add_argument(
        "--fresh-statistics",
        action="store_true",
        help="PostgreSQL: measure without the ANALYZE that otherwise follows the warm-up (the planner then knows "
        "only the empty tables of a fresh database)",
    )
    parser.add_argument("--users", type=int, default=8, help="client users the clients share (default 8)")
    parser.add_argument("--max-tokens", type=int, default=32)
    parser.add_argument("--pop-wait", type=float, default=5, help="the slots' long-poll wait, s (default 5)")
    parser.add_argument(
        "--postgres-url",
        help=f"admin URL of a PostgreSQL server (else HORDE_BENCH_DATABASE_URL, else {S.DEFAULT_POSTGRES_URL})",
    )
    parser.add_argument(
        "--redis-url",
        default=os.environ.get(REDIS_ENV) or DEFAULT_REDIS_URL,
        help=f"Redis for the PostgreSQL run (else {REDIS_ENV}, else {DEFAULT_REDIS_URL})",
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="exit 1 on any 5xx, unfinished request, balance that differs from its ledger, double "
        "charge, or no request answered in the whole run (counts, never timings)",
    )
    parser.add_argument(
        "--keep-log", action="store_true", help="keep the server's log (kept anyway when a count fails)"
    )
    parser.add_argument(
        "--no-submit-pop",
        action="store_true",
        help="only the slots that pop and submit in two calls (default: that row, then the row of slots "
        "whose submit carries the next pop)",
    )
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--pgbouncer",
        action="store_true",
        help="PostgreSQL: the servers connect through Debian's pgbouncer in transaction mode (the configuration of "
        "docs/how-to/production.md)",
    )
    parser.add_argument(
        "--pooler-setting",
        choices=("transaction", "session", "unset"),
        help="the PostgreSQL servers' HORDE_DATABASE_POOLER (default: transaction with --pgbouncer, else unset; "
        "unset: as without it)",
    )
    parser.add_argument(
        "--sqlite-processes",
        type=int,
        default=1,
        help="SQLite: above 1, gunicorn with that many processes on the one file, without Redis (default 1: "
        "python -m horde serve)",
    )
    parser.add_argument(
        "--history",
        type=int,
        default=0,
        help="finished requests (each with its job and kudos entries) written before the run, as an old Horde "
        "keeps them (default 0: a fresh database)",
    )
    args = parser.parse_args(argv)
    if not 0 <= args.stream_share <= 1:
        parser.error("--stream-share must be between 0 and 1")
    if args.rate < 0:
        parser.error("--rate must be 0 (closed loop) or more")
    if args.history < 0:
        parser.error("--history must be 0 or more")
    if args.pooler_setting is None:
        args.pooler_setting = "transaction" if args.pgbouncer else "unset"
    if args.pgbouncer and PGBOUNCER is None:
        parser.error("--pgbouncer: pgbouncer is not installed (Debian: apt-get install pgbouncer)")
    if args.sqlite_processes < 1:
        parser.error("--sqlite-processes must be 1 or more")

    backends = ["postgresql", "sqlite"] if args.backend == "both" else [args.backend]
    if "postgresql" in backends:
        args.admin_url, explicit = S.postgres_admin_url(args.postgres_url)
        problem = S.postgres_reachable(args.admin_url)
        if problem is not None:
            if explicit or args.backend == "postgresql":
                print(f"PostgreSQL at {args.admin_url} is unreachable: {problem}", file=sys.stderr)
                return 2
            print(f"PostgreSQL skipped: {args.admin_url} is unreachable ({problem})")
            backends.remove("postgresql")
    started, speed_before_s = time.perf_counter(), S.machine_speed_s()
    rows, all_ok = [], True
    modes = [False] if args.no_submit_pop else [False, True]
    for backend in backends:
        for submit_pop in modes:
            load = (
                f"{args.rate:g} requests/s offered, at most {args.clients} in flight"
                if args.rate
                else f"{args.clients} clients"
            )
            S.log(
                f"{backend}, {MODES[submit_pop]}: {load} ({args.stream_share:.0%} streamed), "
                f"{args.workers} workers × {args.slots} slots, {args.warmup:g} s warm-up + {args.duration:g} s"
            )
            row, ok = run(backend, submit_pop, args)
            rows.append(row)
            all_ok = all_ok and ok
    load = (
        f"{args.rate:g} requests/s offered (open loop, at most {args.clients} in flight)"
        if args.rate
        else (f"{args.clients} clients (closed loop)")
    )
    print(
        f"load: {load} through /v1 ({args.stream_share:.0%} streamed, max_tokens {args.max_tokens}), "
        f"{args.workers} workers × {args.slots} slots over the native protocol, {args.duration:g} s measured"
    )
    print(
        S.table(
            [
                "server",
                "offered per s",
                "completed",
                "per s",
                "missed",
                "json p50 ms",
                "json p99 ms",
                "stream p50 ms",
                "stream p99 ms",
                "server CPU ms/req",
                "db xacts/req",
                "db CPU ms/req",
                "bench CPU %",
                "5xx",
                "errors",
                "unfinished",
                "balances = ledger",
                "charged twice",
            ],
            rows,
        )
    )
    print(
        f"machine: a Python loop of {S.SPEED_PROBE_ADDITIONS:,} additions took {speed_before_s:.2f} s before the runs "
        f"and {S.machine_speed_s():.2f} s after (compare figures only between runs made side by side)"
    )
    print(f"total {time.perf_counter() - started:.1f} s")
    if args.check and not all_ok:
        print(
            "load check FAILED: a 5xx, an unfinished request, a balance that differs from its ledger, a double "
            "charge, or nothing completed",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
