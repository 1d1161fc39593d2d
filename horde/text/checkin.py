"""A text pop's check-in: the worker's text declarations, kept apart from its chat ones.

A worker that pops only text never appears online to chat: its chat `last_pop_at`
stays at NEVER_POPPED, and chat's online window reads only that column. As on chat's
pop (horde/workers/checkins.py), a check-in that would change nothing is not written:
the process keeps a TextWorkerView of the row until `text_pop_at` is due for a refresh.
"""

from __future__ import annotations

import datetime as dt
import statistics
from dataclasses import dataclass

from sqlalchemy import bindparam, select
from sqlalchemy.orm import Session

from horde import errors
from horde.accounts.identity import Identity
from horde.accounts.models import User
from horde.storage import precompiled
from horde.text import known_models
from horde.text.models import JOB_SUBMITTED, TextJob
from horde.timeutil import utcnow
from horde.workers import service as workers
from horde.workers.checkins import common_declarations
from horde.workers.models import MAX_ADDRESS_CHARS, Worker

NEVER_POPPED = dt.datetime(1970, 1, 1)
#: Below this many generated tokens a second a worker is "slow" (requests with slow_workers false skip it).
SLOW_TOKENS_PER_S = 2.0
RECENT_JOBS_FOR_SPEED = 20


@dataclass(frozen=True)
class TextWorkerView:
    """What a text pop needs of its worker row: identity and text declarations."""

    id: str
    name: str
    owner_id: int
    text_models: list
    text_max_length: int
    text_max_context_length: int
    threads: int
    softprompts: list
    nsfw: bool
    require_upfront_kudos: bool

    @classmethod
    def of(cls, worker: Worker) -> TextWorkerView:
        return cls(
            id=worker.id,
            name=worker.name,
            owner_id=worker.owner_id,
            text_models=list(worker.text_models or []),
            text_max_length=worker.text_max_length or 0,
            text_max_context_length=worker.text_max_context_length or 0,
            threads=worker.threads,
            softprompts=list(worker.softprompts or []),
            nsfw=bool(worker.nsfw),
            require_upfront_kudos=bool(worker.require_upfront_kudos),
        )


def declared(pop: dict) -> tuple:
    """A text pop's declarations as check_in writes them, comparable with the ones last written."""
    return (
        *common_declarations(pop),
        tuple(pop.get("softprompts") or ()),
        bool(pop.get("nsfw")),
        bool(pop.get("require_upfront_kudos")),
        (pop.get("bridge_agent") or "unknown:0:unknown")[:300],
    )


def check_in(session: Session, owner: User | Identity, pop: dict, address: str | None = None) -> Worker:
    """The worker `pop` names, made or updated, with the pop's client `address`; `owner` passed the authorization
    table's RUN_WORKER row (horde/workers/service.py worker_owner)."""
    worker = session.scalar(select(Worker).where(Worker.name == pop["name"]))
    if worker is None:  # chat's insert, so that simultaneous first pops of a new name all succeed
        worker = workers.insert_new(
            session,
            owner,
            pop["name"],
            models=[],
            max_length=pop["max_length"],
            max_context_length=pop["max_context_length"],
            last_pop_at=NEVER_POPPED,
        )
    if worker.owner_id != owner.id:
        raise errors.WorkerNameTaken(f"The worker name '{pop['name']}' belongs to another user.")
    declared = list(dict.fromkeys(pop["models"]))
    # Only what this worker did not declare before: a check-in that repeats its models writes nothing there.
    known_models.remember(session, [name for name in declared if name not in (worker.text_models or ())])
    worker.text_models = declared
    worker.text_max_length = pop["max_length"]
    worker.text_max_context_length = pop["max_context_length"]
    worker.threads = pop["threads"]
    worker.softprompts = list(pop.get("softprompts") or [])
    worker.nsfw = bool(pop.get("nsfw"))
    worker.require_upfront_kudos = bool(pop.get("require_upfront_kudos"))
    worker.bridge_agent = (pop.get("bridge_agent") or "unknown:0:unknown")[:300]
    worker.text_pop_at = utcnow()
    if address is not None:
        worker.ip_address = address[:MAX_ADDRESS_CHARS]
    session.flush()
    return worker


_RECENT_SPEEDS = (
    select(TextJob.tokens, TextJob.started_at, TextJob.ended_at)
    .where(TextJob.worker_id == bindparam("worker"), TextJob.state == JOB_SUBMITTED)
    .order_by(TextJob.ended_at.desc())
    .limit(RECENT_JOBS_FOR_SPEED)
)


def tokens_per_s(session: Session, worker_id: str) -> float | None:
    """Median speed of the worker's latest submitted generations; None before its first."""
    rows = precompiled.execute(session.connection(), _RECENT_SPEEDS, {"worker": worker_id}).all()
    speeds = [tokens / max((ended - started).total_seconds(), 0.001) for tokens, started, ended in rows if ended]
    return statistics.median(speeds) if speeds else None


def is_slow(session: Session, worker_id: str) -> bool:
    speed = tokens_per_s(session, worker_id)
    return speed is not None and speed < SLOW_TOKENS_PER_S
