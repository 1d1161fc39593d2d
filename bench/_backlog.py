"""bench/pop.py --backlog: pop, submit and status through real HTTP, with N requests queued for models no worker serves.

For each backend (SQLite: `python -m horde serve`; PostgreSQL: the production command, gunicorn with the Horde's
worker class and two processes, with Redis) and each backlog level, on a fresh database:

* the backlog: one request per queue (chat and text) is admitted through the API for a model no worker serves,
  then copied N times in the database (new ids, older than anything served, from a requester with more kudos: so
  every backlog request stands ahead of the served ones in the queue's order, the worst place for a claim);
* the measured loop, on each API in turn: a requester queues a request for the served model (untimed), reads its
  status while it waits (timed: its position and wait estimate), a worker of the served model pops it (timed) and
  submits a reply (timed).

Printed: p50 and p99 of pop, submit and status per API and backend, for backlog 0 and each N side by side, with the
ratio of the p50s (the issue's bar: within 2x).
"""

from __future__ import annotations

import datetime as dt
import json
import time
import uuid

import _support as S
from _http import Connection
from sqlalchemy import func, insert, select

from horde.accounts import service as accounts
from horde.chat.models import ChatRequest, ChatRequestModel
from horde.queueing.model_rows import PLACE_COLUMNS
from horde.storage.database import table_of
from horde.text.models import TextRequest, TextRequestModel
from tests.support.processes import Gunicorn, Server, base_env

CHAT_SERVED, TEXT_SERVED = "bench/backlog-served-chat", "koboldcpp/bench-backlog-served"
CHAT_OFFLINE, TEXT_OFFLINE = "bench/backlog-offline-chat", "koboldcpp/bench-backlog-offline"
PROCESSES = 2
#: How much older than the first served request the backlog is: within the lifetime of a waiting text request
#: (20 minutes), which the sweeper would otherwise fault, backlog and all, at its first sweep.
BACKLOG_AGE_S = 600.0
INSERT_BATCH = 2000
SERVER_SETTINGS = {
    "HORDE_RATE_LIMIT_PER_MINUTE": 1_000_000_000,
    "HORDE_OAI_WAIT_BUDGET_S": 3600,
}
#: Each API: its paths, the bodies of its calls, its request tables (the backlog is copied in them).
APIS = {
    "chat": {
        "async": "/api/v2/generate/chat/async",
        "status": "/api/v2/generate/chat/status/",
        "pop": "/api/v2/generate/chat/pop",
        "submit": "/api/v2/generate/chat/submit",
        "tables": (ChatRequest, ChatRequestModel),
        "served": CHAT_SERVED,
        "offline": CHAT_OFFLINE,
    },
    "text": {
        "async": "/api/v2/generate/text/async",
        "status": "/api/v2/generate/text/status/",
        "pop": "/api/v2/generate/text/pop",
        "submit": "/api/v2/generate/text/submit",
        "tables": (TextRequest, TextRequestModel),
        "served": TEXT_SERVED,
        "offline": TEXT_OFFLINE,
    },
}


def request_body(api: str, model: str) -> dict:
    if api == "chat":
        return {
            "models": [model],
            "messages": [{"role": "user", "content": f"backlog bench {uuid.uuid4().hex[:8]}"}],
            "max_tokens": 32,
            "availability_mode": "wait",
        }
    return {
        "prompt": f"backlog bench {uuid.uuid4().hex[:8]}",
        "params": {"max_length": 32, "max_context_length": 1024, "n": 1},
        "models": [model],
    }


def pop_body(api: str, model: str | None = None, name: str = "bench-backlog-worker") -> dict:
    """The served model's worker pops with this body; `model`: once, a worker that then goes away."""
    if api == "chat":
        return {
            "name": f"{name}-chat",
            "models": [model or CHAT_SERVED],
            "max_length": 512,
            "max_context_length": 4096,
            "threads": 1,
            "bridge_agent": "bench:1:backlog",
        }
    return {
        "name": f"{name}-text",
        "models": [model or TEXT_SERVED],
        "max_length": 512,
        "max_context_length": 2048,
        "threads": 1,
        "nsfw": True,
        "softprompts": [],
        "bridge_agent": "KoboldAI Client:1.19.2:bench",
    }


def submit_body(api: str, job_id: str) -> dict:
    if api == "chat":
        return {"id": job_id, "content": "The bench worker's reply.", "finish_reason": "stop"}
    return {"id": job_id, "generation": "The bench worker's reply.", "state": "ok"}


def call(conn: Connection, method: str, path: str, key: str, body: dict | None = None) -> dict:
    status, raw = conn.request(method, path, {"apikey": key}, body)
    if status >= 300:
        raise RuntimeError(f"{method} {path}: HTTP {status} {raw[:300]!r}")
    return json.loads(raw) if raw else {}


def fill_backlog(runtime, conn: Connection, api: str, key: str, size: int) -> None:
    """One request admitted through the API for the offline model, copied `size - 1` times, older and ahead."""
    if size <= 0:
        return
    spec = APIS[api]
    template_id = call(conn, "POST", spec["async"], key, request_body(api, spec["offline"]))["id"]
    requests_table, models_table = (table_of(model) for model in spec["tables"])
    with runtime.db.transaction() as session:
        chosen = select(requests_table).where(requests_table.c.id == template_id)
        template = dict(session.execute(chosen).one()._mapping)
        start = template["created_at"] - dt.timedelta(seconds=BACKLOG_AGE_S)
        rows = [
            dict(template, id=str(uuid.uuid4()), created_at=start + dt.timedelta(microseconds=index))
            for index in range(size - 1)
        ]
        for first in range(0, len(rows), INSERT_BATCH):
            batch = rows[first : first + INSERT_BATCH]
            session.execute(insert(requests_table), batch)
            models = [{"request_id": row["id"], "model": spec["offline"], **place(row)} for row in batch]
            session.execute(insert(models_table), models)


def place(row: dict) -> dict:
    """A model row's copy of its request's place in the queue (horde/queueing/model_rows.py)."""
    return {name: row[name] for name in PLACE_COLUMNS}


def waiting_backlog(runtime) -> dict[str, int]:
    """The backlog's requests still waiting, per API: all of them, or the figures measured something else."""
    left = {}
    with runtime.db.transaction() as session:
        for api, spec in APIS.items():
            requests_table, models_table = (table_of(model) for model in spec["tables"])
            offline = select(models_table.c.request_id).where(models_table.c.model == spec["offline"])
            waiting = requests_table.c.state == "waiting"
            left[api] = session.scalar(select(func.count()).where(waiting, requests_table.c.id.in_(offline)))
    return left


def measure_api(conn: Connection, api: str, requester_key: str, worker_key: str, rounds: int) -> dict[str, list]:
    """`rounds` of: queue a served request (untimed), read its status, pop it, submit; timings in seconds."""
    spec = APIS[api]
    timings: dict[str, list] = {"pop": [], "submit": [], "status": []}
    for index in range(rounds + 3):  # three warm-up rounds
        request_id = call(conn, "POST", spec["async"], requester_key, request_body(api, spec["served"]))["id"]
        started = time.perf_counter()
        call(conn, "GET", spec["status"] + request_id, requester_key)
        status_s = time.perf_counter() - started
        started = time.perf_counter()
        job = call(conn, "POST", spec["pop"], worker_key, pop_body(api))
        pop_s = time.perf_counter() - started
        if not job.get("id"):
            raise RuntimeError(f"{api}: the worker's pop found no job: {job}")
        started = time.perf_counter()
        call(conn, "POST", spec["submit"], worker_key, submit_body(api, job["id"]))
        submit_s = time.perf_counter() - started
        if index >= 3:
            timings["status"].append(status_s)
            timings["pop"].append(pop_s)
            timings["submit"].append(submit_s)
    return timings


def run_level(backend: str, backlog: int, args) -> dict[str, dict[str, list]]:
    """A fresh database and server with `backlog` requests for offline models on each queue; timings per API."""
    with S.fresh_runtime(backend, args.admin_url, "backlog") as runtime:
        with runtime.db.transaction() as session:
            tag = uuid.uuid4().hex[:6]
            _, backlog_key = accounts.create_user(session, f"bench-backlog-{tag}", kudos=1_000_000_000)
            _, requester_key = accounts.create_user(session, f"bench-requester-{tag}", kudos=10_000_000)
            _, worker_key = accounts.create_user(session, f"bench-owner-{tag}", trusted=True)
        settings = dict(SERVER_SETTINGS)
        url = runtime.db.engine.url.render_as_string(hide_password=False)
        if backend == "postgresql":
            settings.update(HORDE_REDIS_URL=args.redis_url, HORDE_REDIS_PREFIX=f"horde_bench_{tag}")
            server = Gunicorn(base_env(url, **settings), PROCESSES, worker_class="horde.gunicorn_worker.HordeWorker")
        else:
            server = Server(base_env(url, **settings))
        try:
            conn = Connection("127.0.0.1", server.port)
            started = time.monotonic()
            for api, spec in APIS.items():  # chat admits a model once a worker declared it: both pop once, empty
                call(conn, "POST", spec["pop"], worker_key, pop_body(api))
                call(conn, "POST", spec["pop"], worker_key, pop_body(api, spec["offline"], "bench-backlog-gone"))
                fill_backlog(runtime, conn, api, backlog_key, backlog)
            if backend == "postgresql":
                with runtime.db.engine.connect() as connection:  # statistics as autovacuum would give them
                    connection.execution_options(isolation_level="AUTOCOMMIT").exec_driver_sql("ANALYZE")
            S.log(f"{backend}: backlog {backlog} per queue in {time.monotonic() - started:.1f} s")
            timings = {api: measure_api(conn, api, requester_key, worker_key, args.rounds) for api in APIS}
            left = waiting_backlog(runtime)
            if left != dict.fromkeys(APIS, backlog):
                raise RuntimeError(f"the backlog did not stay queued: {left} waiting of {backlog} per API")
            return timings
        finally:
            S.stop_and_remove_log(server)


def print_table(results: dict, levels: list[int], args) -> None:
    rows = []
    for (backend, api), by_level in results.items():
        base = by_level[0]
        for name in ("pop", "submit", "status"):
            row = [backend, api, name, S.ms(S.median(base[name])), S.ms(S.percentile(base[name], 99))]
            for level in levels:
                if level == 0:
                    continue
                figures = by_level[level][name]
                ratio = S.median(figures) / S.median(base[name])
                row += [S.ms(S.median(figures)), S.ms(S.percentile(figures, 99)), f"{ratio:.2f}x"]
            rows.append(row)
    headers = ["backend", "api", "call", "0: p50", "0: p99"]
    for level in levels:
        if level:
            headers += [f"{level}: p50", f"{level}: p99", f"{level}: ratio"]
    print(
        f"pop, submit, status over HTTP with requests for offline models queued ahead ({args.rounds} rounds per API; "
        f"ms; SQLite: python -m horde serve; PostgreSQL: gunicorn -k HordeWorker -w {PROCESSES} + Redis)"
    )
    print(S.table(headers, rows))


def main(args) -> int:
    levels = [0] + [int(value) for value in args.backlog.split(",") if value and int(value) > 0]
    args.admin_url, explicit = S.postgres_admin_url(args.postgres_url)
    backends = []
    if not args.postgres_only:
        backends.append("sqlite")
    if not args.sqlite_only:
        backends += S.chosen_backends("postgresql", args.admin_url, explicit)
    results: dict = {}
    for backend in backends:
        for level in levels:
            for api, timings in run_level(backend, level, args).items():
                results.setdefault((backend, api), {})[level] = timings
    print_table(results, levels, args)
    return 0
