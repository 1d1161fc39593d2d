"""A Horde's past for tests of reads that must not walk it: finished requests with their submitted jobs, and
helpers that tell how a statement read a table (PostgreSQL's counts of rows read, SQLite's query plan)."""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Callable

from sqlalchemy import insert, text

from horde.chat.models import DONE, JOB_SUBMITTED, ChatJob, ChatRequest, ChatRequestModel
from horde.text import models as text_models
from horde.timeutil import utcnow
from horde.workers.models import Worker

#: Rows per executemany: SQLAlchemy sends them as multi-row INSERTs.
BATCH_ROWS = 5_000
DAY_S = 86_400


def worker(runtime, owner_id: int) -> str:
    """A worker row of `owner_id` that popped chat and text (retired: its last pops a day ago); its id."""
    worker_id = str(uuid.uuid4())
    with runtime.db.transaction() as session:
        session.connection().execute(
            insert(Worker),
            {
                "id": worker_id,
                "name": f"past-{worker_id[:8]}",
                "owner_id": owner_id,
                "models": ["past-model"],
                "max_length": 512,
                "max_context_length": 4096,
                "last_pop_at": utcnow() - dt.timedelta(days=1),
                "text_models": ["past-text-model"],
                "text_max_length": 512,
                "text_max_context_length": 4096,
                "text_pop_at": utcnow() - dt.timedelta(days=1),
            },
        )
    return worker_id


def past_chat(runtime, user_id: int, worker_id: str, count: int) -> None:
    """`count` finished chat requests of `user_id`, each with its job submitted by `worker_id`, a day old."""

    def request(n: int, request_id: str, job_id: str, at: dt.datetime) -> dict:
        finished = {"finished_at": at + dt.timedelta(seconds=1), "delivered": True}
        return chat_request(request_id, user_id, DONE, at) | finished

    def job(n: int, request_id: str, job_id: str, at: dt.datetime) -> dict:
        return {
            "id": job_id,
            "request_id": request_id,
            "worker_id": worker_id,
            "model": "past-model",
            "state": JOB_SUBMITTED,
            "started_at": at,
            "deadline_at": at + dt.timedelta(seconds=60),
            "ended_at": at + dt.timedelta(seconds=1),
        }

    _write(runtime, count, DAY_S, (ChatRequest, request), (ChatJob, job))


def chat_request(request_id: str, user_id: int, state: str, at: dt.datetime) -> dict:
    """A chat request row for `past-model`, in `state`, made at `at`."""
    return {
        "id": request_id,
        "user_id": user_id,
        "state": state,
        "created_at": at,
        "models": ["past-model"],
        "max_tokens": 32,
        "context_tokens": 4096,
        "payload": {},
    }


def live_chat(runtime, user_id: int, states: list[str]) -> list[str]:
    """Requests of `user_id` made now, one in each of `states`, each with its model row; their ids."""
    rows = [chat_request(str(uuid.uuid4()), user_id, state, utcnow()) for state in states]
    with runtime.db.transaction() as session:
        session.connection().execute(insert(ChatRequest), rows)
        session.connection().execute(
            insert(ChatRequestModel), [{"request_id": row["id"], "model": "past-model"} for row in rows]
        )
    return [row["id"] for row in rows]


def past_text(runtime, user_id: int, worker_ids: list[str], count: int, *, age_s: float = DAY_S) -> None:
    """`count` finished text requests of `user_id`, each with its generation submitted by one of `worker_ids` in
    turn, one a second, the latest `age_s` ago."""

    def request(n: int, request_id: str, job_id: str, at: dt.datetime) -> dict:
        return done_text_request(request_id, user_id, at, "past-model")

    def job(n: int, request_id: str, job_id: str, at: dt.datetime) -> dict:
        ended = at + dt.timedelta(seconds=1)
        return submitted_text_job(job_id, request_id, worker_ids[n % len(worker_ids)], "past-model", 32, at, ended)

    _write(runtime, count, age_s, (text_models.TextRequest, request), (text_models.TextJob, job))


def done_text_request(request_id: str, user_id: int, at: dt.datetime, model: str) -> dict:
    """A text request row for `model`, made at `at`, its one generation done."""
    return {
        "id": request_id,
        "user_id": user_id,
        "state": text_models.DONE,
        "created_at": at,
        "models": [model],
        "max_length": 32,
        "max_context_length": 1024,
        "prompt": "past",
        "params": {},
        "waiting": 0,
        "finished": 1,
    }


def submitted_text_job(
    job_id: str, request_id: str, worker_id: str, model: str, tokens: int, started: dt.datetime, ended: dt.datetime
) -> dict:
    """A text job row of `worker_id`, submitted with `tokens` at `ended`."""
    return {
        "id": job_id,
        "request_id": request_id,
        "worker_id": worker_id,
        "worker_name": "past",
        "model": model,
        "state": text_models.JOB_SUBMITTED,
        "tokens": tokens,
        "started_at": started,
        "deadline_at": started + dt.timedelta(seconds=60),
        "ended_at": ended,
    }


def _write(runtime, count: int, age_s: float, *tables: tuple[type, Callable[..., dict]]) -> None:
    """`count` rows in each of `tables` ((model, row maker)), made one a second up to `age_s` ago, by batches;
    then the statistics."""
    start = utcnow() - dt.timedelta(seconds=age_s + count)
    for first in range(0, count, BATCH_ROWS):
        made = [
            (n, str(uuid.uuid4()), str(uuid.uuid4()), start + dt.timedelta(seconds=n))
            for n in range(first, min(count, first + BATCH_ROWS))
        ]
        with runtime.db.transaction() as session:
            for model, row in tables:
                session.connection().execute(insert(model), [row(*values) for values in made])
    analyze(runtime)


def analyze(runtime) -> None:
    """The statistics a server has after autovacuum's first look at the tables (PostgreSQL's and SQLite's)."""
    with runtime.db.transaction() as session:
        session.connection().exec_driver_sql("ANALYZE")


def rows_read(connection, table: str) -> int:
    """PostgreSQL: rows of `table` that the connection's open transaction has read so far, by sequential scans
    and through indexes (its own counts, before they reach the statistics)."""
    return connection.execute(
        text(
            "SELECT coalesce(sum(seq_tup_read + coalesce(idx_tup_fetch, 0)), 0) FROM pg_stat_xact_user_tables "
            "WHERE relname = :table"
        ),
        {"table": table},
    ).scalar_one()


def sqlite_plan(connection, sql: str, parameters) -> str:
    """SQLite's query plan of `sql`, one line per step."""
    rows = connection.exec_driver_sql(f"EXPLAIN QUERY PLAN {sql}", parameters).all()
    return "\n".join(row[-1] for row in rows)
