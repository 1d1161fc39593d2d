"""A text request's life after admission: submit, fault, expiry, cancel (a pop's take: horde/text/take.py).

Every change of state is one compare-and-set UPDATE: it names the state it expects
and the caller learns from the row count whether it won. A job moves once from
processing; the request's counters move with it in the same transaction, so each
generation is charged once and rewarded once. A cancelled request is never handed
out again: neither a claim nor a fault's restart moves a request that is cancelled.
On PostgreSQL every transition of a request's jobs first takes the request's row
lock (a claim's choice, a submit's read, a cancel, an expiry), then the jobs', then
the users': one order, so two transitions never wait for each other in a cycle.
Functions never commit.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, cast

from sqlalchemy import (
    JSON,
    BigInteger,
    CursorResult,
    DateTime,
    Integer,
    Row,
    String,
    Text,
    Update,
    bindparam,
    case,
    select,
    update,
)
from sqlalchemy.orm import Session

from horde import errors
from horde.accounts import service as accounts
from horde.accounts.identity import Identity
from horde.accounts.models import User
from horde.accounts.moves import Kind, Move, multiplied
from horde.chat import tiers
from horde.storage import precompiled
from horde.storage.database import is_postgresql, table_of
from horde.text import pricing
from horde.text.models import (
    CANCELLED,
    DONE,
    FAULTED,
    JOB_ABORTED,
    JOB_CANCELLED,
    JOB_FAULTED,
    JOB_PROCESSING,
    JOB_SUBMITTED,
    PROCESSING,
    WAITING,
    TextJob,
    TextRequest,
)
from horde.timeutil import utcnow
from horde.workers.models import Worker

if TYPE_CHECKING:
    from horde.config import Settings


ACCEPTED_STATES = ("ok", "censored")


def _compare_and_set(session: Session, statement: Update) -> bool:
    return _rowcount(session, statement) == 1


def _rowcount(session: Session, statement: Update) -> int:
    result = session.execute(statement.execution_options(synchronize_session=False))
    return cast(CursorResult, result).rowcount or 0


def _one_left(now) -> dict:
    """The request's values once one running generation leaves it: final when it was the last."""
    last = TextRequest.waiting + TextRequest.processing == 1
    final = case((TextRequest.cancelled.is_(True), CANCELLED), else_=DONE)
    return {
        "processing": TextRequest.processing - 1,
        "state": case((last, final), else_=TextRequest.state),
        "finished_at": case((last, now), else_=TextRequest.finished_at),
    }


_REQUESTS, _JOBS = table_of(TextRequest), table_of(TextJob)
_WORKERS = table_of(Worker)
#: A submit's one read: the job, its worker's owner (none when the worker row is gone) and what its price needs.
_OWNED_JOB = (
    select(
        _JOBS.c.id,
        _JOBS.c.model,
        _JOBS.c.request_id,
        _WORKERS.c.owner_id,
        _REQUESTS.c.user_id,
        _REQUESTS.c.max_length,
        _REQUESTS.c.prompt_tokens,
        _REQUESTS.c.shared_key_id,
        _REQUESTS.c.kudos_estimate,
        _REQUESTS.c.n,
        _REQUESTS.c.service_tier,
        _REQUESTS.c.usage_multiplier,
    )
    .select_from(
        _JOBS.join(_REQUESTS, _REQUESTS.c.id == _JOBS.c.request_id).outerjoin(
            _WORKERS, _WORKERS.c.id == _JOBS.c.worker_id
        )
    )
    .where(_JOBS.c.id == bindparam("id_"))
)
#: The generation lands on a job still processing: a compare-and-set, built once (`*_v`: a SET clause's values).
_SUBMIT_JOB = (
    update(_JOBS)
    .where(_JOBS.c.id == bindparam("id_"), _JOBS.c.state == JOB_PROCESSING)
    .values(
        state=JOB_SUBMITTED,
        ended_at=bindparam("now_v", type_=DateTime),
        text=bindparam("text_v", type_=Text),
        seed=bindparam("seed_v", type_=BigInteger),
        generation_state=bindparam("generation_state_v", type_=String),
        gen_metadata=bindparam("gen_metadata_v", type_=JSON),
        tokens=bindparam("tokens_v", type_=Integer),
        cached_tokens=bindparam("cached_tokens_v", type_=Integer),
        kudos=bindparam("kudos_v", type_=Integer),
        finish_reason=bindparam("finish_reason_v", type_=String),
    )
)
#: The request counts one more generation finished and charged, and one fewer running.
_FINISH_ONE = (
    update(_REQUESTS)
    .where(_REQUESTS.c.id == bindparam("id_"), _REQUESTS.c.processing > 0)
    .values(
        finished=_REQUESTS.c.finished + 1,
        kudos_charged=_REQUESTS.c.kudos_charged + bindparam("kudos_v", type_=Integer),
        **_one_left(bindparam("now_v", type_=DateTime)),
    )
)
#: PostgreSQL: the submit's read takes its request's row lock first (the order of every transition, above).
_OWNED_JOB_LOCKING = _OWNED_JOB.with_for_update(of=_REQUESTS)
_JOB_STATE = select(_JOBS.c.state).where(_JOBS.c.id == bindparam("id_"))
#: A running generation ends without one (faulted, aborted): a compare-and-set from processing.
_END_JOB = (
    update(_JOBS)
    .where(_JOBS.c.id == bindparam("id_"), _JOBS.c.state == JOB_PROCESSING)
    .values(
        state=bindparam("state_v", type_=String),
        ended_at=bindparam("now_v", type_=DateTime),
        reason=bindparam("reason_v", type_=Text),
    )
)
#: The request still runs and was not cancelled: the condition of every transition that hands work out again.
_LIVE = (
    _REQUESTS.c.id == bindparam("id_"),
    _REQUESTS.c.state.in_((WAITING, PROCESSING)),
    _REQUESTS.c.cancelled.is_(False),
)
#: A faulted generation waits again, while the request is live and has attempts left (`max_attempts` per
#: generation, counted over the request).
_RESTART_ONE = (
    update(_REQUESTS)
    .where(*_LIVE, _REQUESTS.c.restarted + 1 < _REQUESTS.c.n * bindparam("max_attempts", type_=Integer))
    .values(
        processing=_REQUESTS.c.processing - 1,
        waiting=_REQUESTS.c.waiting + 1,
        restarted=_REQUESTS.c.restarted + 1,
        state=WAITING,
        fault_message=bindparam("reason_v", type_=Text),
    )
)
#: At its last attempt a live request faults; its other running generations end with it (_END_RUNNING_JOBS).
_FAULT_REQUEST = (
    update(_REQUESTS)
    .where(*_LIVE)
    .values(
        state=FAULTED,
        waiting=0,
        processing=0,
        restarted=_REQUESTS.c.restarted + 1,
        finished_at=bindparam("now_v", type_=DateTime),
        fault_message=bindparam("reason_v", type_=Text),
    )
)
_END_RUNNING_JOBS = (
    update(_JOBS)
    .where(_JOBS.c.request_id == bindparam("id_"), _JOBS.c.state == JOB_PROCESSING)
    .values(state=JOB_CANCELLED, ended_at=bindparam("now_v", type_=DateTime), reason="The request faulted.")
)
#: A cancelled request's generation only leaves it: the request ends when it was the last.
_LEAVE_ONE = (
    update(_REQUESTS)
    .where(
        _REQUESTS.c.id == bindparam("id_"),
        _REQUESTS.c.state.in_((WAITING, PROCESSING)),
        _REQUESTS.c.processing > 0,
    )
    .values(**_one_left(bindparam("now_v", type_=DateTime)))
)
#: The sweeper skips a request another transaction holds (a submit, a cancel): a later sweep catches it.
_LOCK_REQUEST_UNLESS_HELD = (
    select(_REQUESTS.c.id).where(_REQUESTS.c.id == bindparam("id_")).with_for_update(skip_locked=True)
)
_DUE_JOBS = select(_JOBS.c.id, _JOBS.c.request_id).where(
    _JOBS.c.state == JOB_PROCESSING, _JOBS.c.deadline_at < bindparam("now_v", type_=DateTime)
)
#: A request no worker took in its lifetime: it faults, or, with generations still running, waits for them only.
_EXPIRE_REQUEST = (
    update(_REQUESTS)
    .where(_REQUESTS.c.id == bindparam("id_"), _REQUESTS.c.state == WAITING, _REQUESTS.c.cancelled.is_(False))
    .values(
        waiting=0,
        state=case((_REQUESTS.c.processing == 0, FAULTED), else_=PROCESSING),
        finished_at=case(
            (_REQUESTS.c.processing == 0, bindparam("now_v", type_=DateTime)), else_=_REQUESTS.c.finished_at
        ),
        fault_message=bindparam("reason_v", type_=Text),
    )
)


def owned_job(session: Session, owner: User | Identity, job_id: str) -> Row:
    """The job with what a submit needs of its worker and request (`_OWNED_JOB`), if the owner's worker runs it;
    on PostgreSQL its request's row is locked until the transaction ends."""
    statement = _OWNED_JOB_LOCKING if is_postgresql(session) else _OWNED_JOB
    job = precompiled.execute(session.connection(), statement, {"id_": job_id}).first()
    if job is None:
        raise errors.InvalidJobID(f"No text job '{job_id}'.")
    if job.owner_id != owner.id:
        raise errors.WrongCredentials("This job belongs to a worker of another user.")
    return job


def _request_of(session: Session, job: TextJob | Row) -> TextRequest:
    """A job's request: its foreign key (ON DELETE CASCADE) guarantees one."""
    request = session.get(TextRequest, job.request_id)
    assert request is not None
    return request


def _refuse_ended(session: Session, job_id: str) -> None:
    state = precompiled.execute(session.connection(), _JOB_STATE, {"id_": job_id}).scalar()
    if state == JOB_SUBMITTED:
        raise errors.DuplicateGen("This generation was already submitted.")
    raise errors.AbortedGen(f"This generation is no longer assigned to the worker (it is {state}).")


def submit(session: Session, settings: Settings, owner: User | Identity, body: dict) -> tuple[int, str, TextRequest]:
    """Store one generation and settle it; a state other than ok/censored is a fault (returns reward 0).
    Answers the kudos, the job's id and the request as it is now."""
    job = owned_job(session, owner, body["id"])
    if body["state"] not in ACCEPTED_STATES:
        fault(session, settings, job, f"The worker submitted the generation in state '{body['state']}'.")
        request = _request_of(session, job)
        session.refresh(request)  # as the fault left it: waiting again, so the caller announces it
        return 0, job.id, request
    generated = body.get("generation") or ""
    tokens, kudos = pricing.charge(
        job.model,
        generation=generated,
        reported=body.get("completion_tokens"),
        max_length=job.max_length,
        prompt_tokens=job.prompt_tokens,
        reference_path=settings.model_reference_path,
    )
    # The requester pays its tier's share of the price (a flex generation HORDE_BATCH_PRICE_FACTOR of it) times its
    # usage multiplier (PUT /users/{id}); the worker earns the price (horde/chat/tiers.py).
    charge = multiplied(
        tiers.requester_price(kudos, job.service_tier, settings.batch_price_factor), job.usage_multiplier or 1.0
    )
    reward = kudos
    if job.shared_key_id:  # at most its share of what the admission reserved of the key (accounts/shared_keys.py)
        share = job.kudos_estimate // job.n
        charge = min(charge, share)
        reward = reward if job.service_tier == tiers.FLEX else min(reward, share)
    now = utcnow()
    connection = session.connection()
    landed = precompiled.execute(
        connection,
        _SUBMIT_JOB,
        {
            "id_": job.id,
            "now_v": now,
            "text_v": generated,
            "seed_v": body.get("seed") or 0,
            "generation_state_v": body["state"],
            "gen_metadata_v": body.get("gen_metadata") or None,
            "tokens_v": tokens,
            "cached_tokens_v": min(body.get("cached_tokens") or 0, job.prompt_tokens),
            "kudos_v": charge,
            "finish_reason_v": body.get("finish_reason"),
        },
    )
    if landed.rowcount != 1:
        _refuse_ended(session, job.id)
    finished = precompiled.execute(connection, _FINISH_ONE, {"id_": job.request_id, "kudos_v": charge, "now_v": now})
    if finished.rowcount != 1:  # cannot happen while the job ran; refuse (and roll back the job's end) if it does
        raise errors.AbortedGen("This generation is no longer counted as running by its request.")
    # Charge the requester and reward the worker's owner, as chat's settlement does.
    moves = [Move(job.user_id, -charge, Kind.CHARGE, tokens), Move(job.owner_id, reward, Kind.REWARD, tokens)]
    accounts.transfer(session, moves, request_id=job.request_id, shared_key_id=job.shared_key_id)
    return reward, job.id, _request_of(session, job)


def fault(
    session: Session, settings: Settings, job: TextJob | Row, reason: str, *, job_state: str = JOB_FAULTED
) -> bool:
    """End a running job without a generation; its generation waits again, or the request faults at its last
    attempt, or (cancelled) the generation only leaves it. False when the job had already ended.

    The caller holds the request's row lock on PostgreSQL (owned_job, expire_jobs). Each step is a compare-and-set
    whose condition is the request as it is at that moment, never as read before: a cancel that committed first
    leaves the restart and the fault no row, and the generation only leaves the request."""
    now, connection = utcnow(), session.connection()
    ended = precompiled.execute(
        connection, _END_JOB, {"id_": job.id, "state_v": job_state, "now_v": now, "reason_v": reason}
    )
    if ended.rowcount != 1:
        return False
    params = {"id_": job.request_id, "now_v": now, "reason_v": reason, "max_attempts": settings.max_attempts}
    if precompiled.execute(connection, _RESTART_ONE, params).rowcount == 1:
        return True
    if precompiled.execute(connection, _FAULT_REQUEST, params).rowcount == 1:
        precompiled.execute(connection, _END_RUNNING_JOBS, params)
        return True
    precompiled.execute(connection, _LEAVE_ONE, params)
    return True


def expire_jobs(session: Session, settings: Settings) -> list[str]:
    """Abort every job past its ttl; returns the ids of the requests that changed. A request another transaction
    holds is skipped (PostgreSQL): that transaction ends the job or the request, or a later sweep catches it."""
    connection = session.connection()
    reason = f"The worker did not submit the generation within its ttl of {int(settings.job_ttl_s)} s."
    changed = []
    for job in precompiled.execute(connection, _DUE_JOBS, {"now_v": utcnow()}).all():
        if is_postgresql(session):
            held = precompiled.execute(connection, _LOCK_REQUEST_UNLESS_HELD, {"id_": job.request_id}).first()
            if held is None:
                continue
        if fault(session, settings, job, reason, job_state=JOB_ABORTED):
            changed.append(job.request_id)
    return changed


def expire_requests(session: Session, lifetime_s: float) -> list[str]:
    """Requests still waiting after `lifetime_s` fault: no worker took them (the AI Horde's 20 minutes). One
    waiting with generations still running hands out no more, and ends when they do."""
    cutoff = utcnow() - dt.timedelta(seconds=lifetime_s)
    stale = session.scalars(
        select(TextRequest.id).where(TextRequest.state == WAITING, TextRequest.created_at < cutoff)
    ).all()
    params = {"now_v": utcnow(), "reason_v": f"No worker took the request within {int(lifetime_s)} s."}
    connection = session.connection()
    return [
        request_id
        for request_id in stale
        if precompiled.execute(connection, _EXPIRE_REQUEST, {"id_": request_id, **params}).rowcount == 1
    ]


def lock_request(session: Session, request_id: str) -> TextRequest | None:
    """The request read afresh under its row lock (PostgreSQL), for a cancel: a transition's first step."""
    return session.get(
        TextRequest, request_id, populate_existing=True, with_for_update=True if is_postgresql(session) else None
    )


def cancel(session: Session, request: TextRequest, *, running: bool = False) -> bool:
    """Hand out no more generations; with `running`, also end those being generated (uncharged).

    False when the request had already ended. Generations already submitted stay charged. The caller holds the
    request's row lock (lock_request).
    """
    now = utcnow()
    if running:
        stopped = _rowcount(
            session,
            update(TextJob)
            .where(TextJob.request_id == request.id, TextJob.state == JOB_PROCESSING)
            .values(state=JOB_CANCELLED, ended_at=now, reason="The request was cancelled."),
        )
    else:
        stopped = 0
    processing = TextRequest.processing - stopped
    changed = _compare_and_set(
        session,
        update(TextRequest)
        .where(TextRequest.id == request.id, TextRequest.state.in_((WAITING, PROCESSING)))
        .values(
            waiting=0,
            cancelled=True,
            processing=processing,
            state=case((processing == 0, CANCELLED), else_=PROCESSING),
            finished_at=case((processing == 0, now), else_=None),
        ),
    )
    session.refresh(request)
    return changed
