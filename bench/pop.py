"""Pop latency with a deep queue and many online workers, on SQLite and PostgreSQL.

For every (queued requests, online workers) pair, a fresh database is seeded directly
with SQLAlchemy (one transaction: users, workers with last_pop_at = now, ChatRequest +
ChatRequestModel rows with a realistic mix of models, features, max_tokens and
priorities), then `horde.dispatch.pop.pop_once` is timed in-process:

* pop-claim: a random worker pops and claims a job. After each timed pop the job is
  settled (submitted) and a fresh request is queued in its place, untimed, so the
  queue keeps its depth and the worker is free again.
* empty pop: a worker whose model has no queued request pops; `claim` finds nothing
  and `skipped_counts` scans the queue to explain why.

    .venv/bin/python bench/pop.py                     # SQLite + PostgreSQL when reachable
    .venv/bin/python bench/pop.py --queued 1000 --workers 100 --pops 50 --sqlite-only

With `--backlog N[,M]` it measures instead pop, submit and status through real HTTP on both APIs (chat and text),
with 0 and then N (M...) requests queued ahead for models no worker serves (bench/_backlog.py):

    .venv/bin/python bench/pop.py --backlog 10000                  # SQLite, then PostgreSQL + Redis
    .venv/bin/python bench/pop.py --backlog 3000,10000 --rounds 100 --postgres-only
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import random
import sys
import time
import uuid

import _backlog
import _support as S
from sqlalchemy import insert, update

from horde.accounts.keys import hash_api_key, new_api_key
from horde.accounts.models import User
from horde.app import init_schema
from horde.chat.models import (
    DONE,
    JOB_SUBMITTED,
    PRIORITY_CLASS_KUDOS,
    PRIORITY_CLASS_OTHERS,
    WAITING,
    ChatJob,
    ChatRequest,
    ChatRequestModel,
)
from horde.config import Settings
from horde.dispatch.pop import pop_once
from horde.http.payload import load
from horde.protocol import FEATURES, GUARANTEES
from horde.queueing.model_rows import PLACE_COLUMNS
from horde.runtime import Runtime
from horde.timeutil import utcnow
from horde.workers.declarations import features_mask, guarantees_mask
from horde.workers.models import Worker
from horde.workers.schemas import POP_SCHEMA

# Models and how popular they are, with requests and workers.
MODELS = {
    "bench/llama-3.1-8b-instruct": 30,
    "bench/mistral-7b-instruct": 18,
    "bench/qwen2.5-14b-instruct": 14,
    "bench/gemma-2-9b-it": 10,
    "bench/mixtral-8x7b-instruct": 9,
    "bench/phi-3-mini": 7,
    "bench/command-r": 6,
    "bench/llama-3.1-70b-instruct": 6,
}
IDLE_MODEL = "bench/idle-model-without-jobs"
MAX_TOKENS_MIX = ([64, 128, 256, 300, 512, 1024, 2048], [8, 15, 25, 10, 25, 12, 5])
WORKER_MAX_LENGTH_MIX = ([512, 1024, 2048, 4096], [25, 35, 30, 10])
WORKER_CONTEXT_MIX = ([4096, 8192, 16384, 32768], [20, 40, 30, 10])
# What requests need: mostly nothing, some seed/penalties/tools/json (bit names from declarations).
REQUEST_FEATURE_MIX = (
    [
        (),
        ("seed",),
        ("tools",),
        ("json_object",),
        ("json_schema",),
        ("frequency_penalty",),
        ("tools", "seed"),
        ("vision",),
        ("reasoning_effort",),
    ],
    [62, 10, 8, 4, 4, 4, 3, 3, 2],
)
REQUEST_GUARANTEE_MIX = ([(), ("tool_choice",), ("schema_adherence",), ("prompt_fit",)], [90, 4, 3, 3])


def weighted(rng: random.Random, mix):
    values, weights = mix
    return rng.choices(values, weights)[0]


def pick_models(rng: random.Random) -> list[str]:
    names, weights = list(MODELS), list(MODELS.values())
    first = rng.choices(names, weights)[0]
    if rng.random() < 0.2:  # a fifth accept a second (or third) model
        others = [name for name in names if name != first]
        return [first] + rng.sample(others, rng.choice([1, 1, 2]))
    return [first]


def request_row(rng: random.Random, user: dict, created_at: dt.datetime) -> tuple[dict, list[dict]]:
    models = pick_models(rng)
    max_tokens = weighted(rng, MAX_TOKENS_MIX)
    prompt_tokens = int(rng.lognormvariate(5.5, 1.0)) + 10
    features = weighted(rng, REQUEST_FEATURE_MIX)
    guarantees = weighted(rng, REQUEST_GUARANTEE_MIX)
    messages = [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": f"Tell me about the number {rng.randint(0, 10**6)}. " * 4},
    ]
    payload = {
        "messages": messages,
        "max_tokens": max_tokens,
        "temperature": round(rng.uniform(0, 1.2), 2),
        "top_p": 1.0,
        "frequency_penalty": 0,
        "presence_penalty": 0,
    }
    if "seed" in features:
        payload["seed"] = rng.randint(0, 1000)
    tools_temperature = None
    if "tools" in features:
        payload["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": "get_weather",
                    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
                },
            }
        ]
        tools_temperature = payload["temperature"]
    request_id = str(uuid.uuid4())
    row = dict(
        id=request_id,
        user_id=user["id"],
        state=WAITING,
        created_at=created_at,
        finished_at=None,
        priority_class=PRIORITY_CLASS_KUDOS if user["kudos"] > 0 else PRIORITY_CLASS_OTHERS,
        priority=max(user["kudos"], 0),
        models=models,
        max_tokens=max_tokens,
        context_tokens=prompt_tokens + max_tokens,
        prompt_tokens=prompt_tokens,
        required_features=features_mask(features),
        required_guarantees=guarantees_mask(guarantees),
        tools_temperature=tools_temperature,
        only_workers=None,
        trusted_only=rng.random() < 0.05,
        payload=payload,
        n_images=1 if "vision" in features else 0,
        kudos_estimate=max_tokens // 10,
        kudos_charged=0,
        context_adjustments=None,
        client_agent="bench:1:pop",
        body_hash=None,
        holders=1,
        delivered=False,
        attempts=0,
        current_job_id=None,
        worker_id=None,
        worker_name=None,
        served_model=None,
        reply=None,
        progress_content=None,
        progress_reasoning=None,
        progress_seq=0,
        fault_rc=None,
        fault_message=None,
    )
    place = {name: row[name] for name in PLACE_COLUMNS}  # the model rows' copy of the request's place
    return row, [{"request_id": request_id, "model": model, **place} for model in models]


def worker_declaration(rng: random.Random, name: str, models: list[str]) -> dict:
    """A pop body (as the reference worker would send it)."""
    features = list(FEATURES) if rng.random() < 0.6 else [f for f in FEATURES if rng.random() < 0.6]
    guarantees = [g for g in GUARANTEES if rng.random() < 0.5]
    return load(
        POP_SCHEMA,
        {
            "name": name,
            "models": models,
            "max_length": weighted(rng, WORKER_MAX_LENGTH_MIX),
            "max_context_length": weighted(rng, WORKER_CONTEXT_MIX),
            "threads": 1,
            "features": features,
            "guarantees": guarantees,
            "bridge_agent": "bench:1:pop",
            "wait": 0,
        },
    )


class Seeded:
    def __init__(self):
        self.workers: list[tuple[str, dict]] = []  # (owner key, pop request)
        self.idle_workers: list[tuple[str, dict]] = []
        self.users: list[dict] = []


def seed(runtime, rng: random.Random, queued: int, n_workers: int, n_idle: int, analyze: bool = True) -> Seeded:
    seeded = Seeded()
    now = utcnow()
    users, keys = [], {}
    # Requesters: a third with kudos (priority class 0), the rest without.
    for index in range(200):
        kudos = rng.choice([0, 0, 10, 250, 5000]) if index % 3 == 0 else 0
        users.append(
            dict(
                id=index + 2,
                username=f"bench-requester-{index}",
                api_key_hash=hash_api_key(new_api_key()),
                kudos=kudos,
                trusted=False,
                anonymous=False,
                created_at=now,
            )
        )
    # Worker owners: one per ten workers, half trusted.
    n_owners = max(1, (n_workers + n_idle) // 10)
    owners = []
    for index in range(n_owners):
        key = new_api_key()
        user_id = len(users) + 2
        users.append(
            dict(
                id=user_id,
                username=f"bench-owner-{index}",
                api_key_hash=hash_api_key(key),
                kudos=0,
                trusted=index % 2 == 0,
                anonymous=False,
                created_at=now,
            )
        )
        owners.append((user_id, key))
        keys[user_id] = key
    seeded.users = users[:200]

    worker_rows = []
    names, weights = list(MODELS), list(MODELS.values())
    for index in range(n_workers + n_idle):
        idle = index >= n_workers
        owner_id, key = owners[index % n_owners]
        name = f"bench-worker-{index}" if not idle else f"bench-idle-worker-{index}"
        if idle:
            models = [IDLE_MODEL]
        else:
            models = list(dict.fromkeys(rng.choices(names, weights, k=rng.choice([1, 1, 1, 2, 3]))))
        pop_request = worker_declaration(rng, name, models)
        worker_rows.append(
            dict(
                id=str(uuid.uuid4()),
                name=name,
                owner_id=owner_id,
                models=models,
                max_length=pop_request["max_length"],
                max_context_length=pop_request["max_context_length"],
                threads=1,
                features_mask=features_mask(pop_request["features"]),
                guarantees_mask=guarantees_mask(pop_request["guarantees"]),
                max_temperature_with_tools=None,
                bridge_agent=pop_request["bridge_agent"],
                last_pop_at=now,
                created_at=now,
            )
        )
        (seeded.idle_workers if idle else seeded.workers).append((key, pop_request))

    request_rows, model_rows = [], []
    for _ in range(queued):
        created_at = now - dt.timedelta(seconds=rng.uniform(0, 600))
        row, models = request_row(rng, rng.choice(seeded.users), created_at)
        request_rows.append(row)
        model_rows += models

    with runtime.db.transaction() as session:
        session.execute(insert(User), users)
        session.execute(insert(Worker), worker_rows)
        for start in range(0, len(request_rows), 2000):
            session.execute(insert(ChatRequest), request_rows[start : start + 2000])
        for start in range(0, len(model_rows), 5000):
            session.execute(insert(ChatRequestModel), model_rows[start : start + 5000])
    if runtime.db.is_postgresql and analyze:
        from sqlalchemy import text

        with runtime.db.engine.connect() as connection:  # fresh statistics, as autovacuum would give
            connection.execution_options(isolation_level="AUTOCOMMIT").execute(text("ANALYZE"))
    return seeded


def settle_and_refill(runtime, rng: random.Random, seeded: Seeded, job_id: str, request_id: str) -> None:
    """Untimed: the worker submitted its job; a new request arrives, so the queue keeps its depth."""
    now = utcnow()
    row, models = request_row(rng, rng.choice(seeded.users), now)
    with runtime.db.transaction() as session:
        session.execute(update(ChatJob).where(ChatJob.id == job_id).values(state=JOB_SUBMITTED, ended_at=now))
        session.execute(
            update(ChatRequest)
            .where(ChatRequest.id == request_id)
            .values(state=DONE, finished_at=now, reply={"content": "ok"})
        )
        session.execute(insert(ChatRequest), [row])
        session.execute(insert(ChatRequestModel), models)


def measure(runtime, rng: random.Random, seeded: Seeded, pops: int, empty_pops: int) -> dict:
    # Warm-up: caches, prepared statements, SQLAlchemy compiled-statement cache.
    for _ in range(3):
        key, request = seeded.idle_workers[0]
        pop_once(runtime, key, request)
    claim_s, misses, skipped_examples = [], 0, []
    for _ in range(pops):
        key, request = rng.choice(seeded.workers)
        started = time.perf_counter()
        result = pop_once(runtime, key, request)
        elapsed = time.perf_counter() - started
        if result["id"] is None:
            misses += 1
            skipped_examples.append(result.get("skipped"))
            continue
        claim_s.append(elapsed)
        with runtime.db.transaction() as session:
            request_id = session.get(ChatJob, result["id"]).request_id
        settle_and_refill(runtime, rng, seeded, result["id"], request_id)
    empty_s, empty_skipped = [], None
    for index in range(empty_pops):
        key, request = seeded.idle_workers[index % len(seeded.idle_workers)]
        started = time.perf_counter()
        result = pop_once(runtime, key, request)
        empty_s.append(time.perf_counter() - started)
        if result["id"] is not None:
            raise RuntimeError("an idle worker claimed a job: the seed is wrong")
        empty_skipped = result["skipped"]
    return {
        "claim": claim_s,
        "misses": misses,
        "empty": empty_s,
        "empty_skipped": empty_skipped,
        "miss_examples": skipped_examples[:2],
    }


def run_case(backend: str, url_factory, queued: int, n_workers: int, args) -> list:
    database = url_factory()
    runtime = None
    try:
        runtime = Runtime.build(Settings.from_env({}, database_url=database.url))
        init_schema(runtime)
        rng = random.Random(f"{args.seed}-{queued}-{n_workers}")
        started = time.perf_counter()
        seeded = seed(runtime, rng, queued, n_workers, args.idle_workers, analyze=not args.no_analyze)
        seed_s = time.perf_counter() - started
        S.log(f"{backend}: seeded {queued} requests, {n_workers}+{args.idle_workers} workers in {seed_s:.1f} s")
        result = measure(runtime, rng, seeded, args.pops, args.empty_pops)
        S.log(
            f"{backend} q={queued} w={n_workers}: claimed {len(result['claim'])}/{args.pops}, "
            f"empty-pop skipped={result['empty_skipped']}"
            + (f", misses e.g. {result['miss_examples']}" if result["misses"] else "")
        )
        claim, empty = result["claim"], result["empty"]
        return [
            backend,
            queued,
            n_workers,
            f"{len(claim)}/{args.pops}",
            S.ms(S.median(claim)),
            S.ms(S.percentile(claim, 99)),
            S.ms(S.median(empty)),
            S.ms(S.percentile(empty, 99)),
            f"{seed_s:.1f}",
        ]
    finally:
        if runtime is not None:
            runtime.close()
        database.drop()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queued", default="1000,10000", help="comma-separated queue depths (default 1000,10000)")
    parser.add_argument("--workers", default="100,1000", help="comma-separated online worker counts (default 100,1000)")
    parser.add_argument("--pops", type=int, default=200, help="timed claiming pops per case (default 200)")
    parser.add_argument("--empty-pops", type=int, default=100, help="timed empty pops per case (default 100)")
    parser.add_argument("--idle-workers", type=int, default=10, help="workers of a model without jobs (default 10)")
    parser.add_argument(
        "--postgres-url",
        help="admin URL of a PostgreSQL server (else HORDE_BENCH_DATABASE_URL, "
        f"else {S.DEFAULT_POSTGRES_URL} when reachable)",
    )
    parser.add_argument("--sqlite-only", action="store_true")
    parser.add_argument("--postgres-only", action="store_true")
    parser.add_argument(
        "--no-analyze",
        action="store_true",
        help="PostgreSQL: skip ANALYZE after seeding (as with autovacuum off: planner sees empty tables)",
    )
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--backlog",
        help="comma-separated counts of requests for offline models queued on each queue: pop, submit and status "
        "over HTTP on both APIs, for backlog 0 and each count (bench/_backlog.py)",
    )
    parser.add_argument("--rounds", type=int, default=60, help="--backlog: timed rounds per API (default 60)")
    parser.add_argument(
        "--redis-url", default=os.environ.get("HORDE_BENCH_REDIS_URL", "redis://127.0.0.1:6379/0"), help="--backlog"
    )
    args = parser.parse_args(argv)
    if args.backlog:
        return _backlog.main(args)
    queued_levels = [int(value) for value in args.queued.split(",") if value]
    worker_levels = [int(value) for value in args.workers.split(",") if value]

    backends = []
    if not args.postgres_only:
        backends.append(("sqlite", S.SqliteBenchDatabase))
    if not args.sqlite_only:
        admin_url, explicit = S.postgres_admin_url(args.postgres_url)
        problem = S.postgres_reachable(admin_url)
        if problem is None:
            backends.append(("postgresql", lambda: S.PostgresBenchDatabase(admin_url)))
        elif explicit:
            print(f"PostgreSQL at {admin_url} is unreachable: {problem}", file=sys.stderr)
            return 2
        else:
            print(f"PostgreSQL skipped: {admin_url} is unreachable ({problem})")

    started = time.perf_counter()
    rows = []
    for backend, factory in backends:
        for queued in queued_levels:
            for n_workers in worker_levels:
                rows.append(run_case(backend, factory, queued, n_workers, args))
    print(
        f"pop_once latency, in-process ({args.pops} claiming pops from random workers, "
        f"{args.empty_pops} empty pops of a worker whose model has no job; ms"
        + ("; PostgreSQL without ANALYZE" if args.no_analyze else "; PostgreSQL ANALYZEd after seeding")
        + ")"
    )
    print(
        S.table(
            ["backend", "queued", "workers", "claimed", "claim med", "claim p99", "empty med", "empty p99", "seed s"],
            rows,
        )
    )
    print(f"total {time.perf_counter() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
