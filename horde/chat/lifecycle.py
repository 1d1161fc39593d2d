"""A request's life after its claim (horde/chat/claim.py): progress, submit, fault, expiry, cancel.

Functions take a session inside the caller's transaction and return what the
caller must publish; they never commit. Every transition is a compare-and-set
from the state it expects, after the request's row lock. The worker's calls
(progress, submit, fault) run once or more per completed request, so they use
statements built once and load no ORM objects.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import bindparam, exists, func, select, update
from sqlalchemy.orm import Session

from horde import errors
from horde.accounts import service as accounts
from horde.accounts.identity import Identity
from horde.accounts.models import User
from horde.chat import model_rows, pricing, replies
from horde.chat.finish import CLAIM_COLUMNS, Finish
from horde.chat.models import (
    CANCELLED,
    DONE,
    FAULTED,
    FINAL_STATES,
    JOB_ABORTED,
    JOB_CANCELLED,
    JOB_FAULTED,
    JOB_PROCESSING,
    JOB_REFUSED,
    JOB_SUBMITTED,
    PROCESSING,
    PROGRESS_KEPT_SHOWN,
    PROGRESS_NOT_KEPT,
    WAITING,
    ChatJob,
    ChatRequest,
)
from horde.config import Settings
from horde.storage import precompiled
from horde.storage.database import COMMITS_WITHOUT_FLUSH, is_postgresql, table_of
from horde.timeutil import utcnow
from horde.workers.models import Worker

_REQUESTS, _JOBS, _WORKERS = table_of(ChatRequest), table_of(ChatJob), table_of(Worker)
#: With the request's progress_log: whether a progress must be kept (horde/background) costs no round trip more.
_OWNED_JOB = (
    select(
        _JOBS.c.id, _JOBS.c.request_id, _JOBS.c.model, _JOBS.c.worker_id, _WORKERS.c.owner_id, _REQUESTS.c.progress_log
    )
    .join_from(_JOBS, _WORKERS, _JOBS.c.worker_id == _WORKERS.c.id)
    .join(_REQUESTS, _REQUESTS.c.id == _JOBS.c.request_id)
    .where(_JOBS.c.id == bindparam("job"))
)
_REQUEST_COLUMNS = (
    _REQUESTS.c.id,
    _REQUESTS.c.user_id,
    _REQUESTS.c.state,
    _REQUESTS.c.models,
    _REQUESTS.c.payload,
    _REQUESTS.c.required_guarantees,
    _REQUESTS.c.prompt_tokens,
    _REQUESTS.c.max_tokens,
    _REQUESTS.c.n_images,
    _REQUESTS.c.kudos_charged,
    _REQUESTS.c.attempts,
    _REQUESTS.c.current_job_id,
    _REQUESTS.c.kudos_estimate,
    _REQUESTS.c.shared_key_id,
    _REQUESTS.c.progress_log,
    _REQUESTS.c.service_tier,
    _REQUESTS.c.usage_multiplier,
)
_READ_REQUEST = select(*_REQUEST_COLUMNS).where(_REQUESTS.c.id == bindparam("request"))
#: A worker's call in one round trip: its job, the job's worker's owner, and the request under its row lock.
#: Only the request is locked; what is read of the job and worker never changes after the claim.
_JOB_AND_REQUEST = (
    select(
        *_REQUEST_COLUMNS,
        _JOBS.c.id.label("job_id"),
        _JOBS.c.model.label("job_model"),
        _JOBS.c.worker_id.label("job_worker_id"),
        _WORKERS.c.owner_id,
    )
    .join_from(_JOBS, _WORKERS, _JOBS.c.worker_id == _WORKERS.c.id)
    .join(_REQUESTS, _REQUESTS.c.id == _JOBS.c.request_id)
    .where(_JOBS.c.id == bindparam("job"))
)
_JOB_AND_LOCKED_REQUEST = _JOB_AND_REQUEST.with_for_update(of=_REQUESTS)
_LOCK_REQUEST_UNLESS_HELD = _READ_REQUEST.with_for_update(skip_locked=True)
_JOB_STATE = select(_JOBS.c.state).where(_JOBS.c.id == bindparam("job"))
_KUDOS_CHARGED = select(_REQUESTS.c.kudos_charged).where(_REQUESTS.c.id == bindparam("request"))
_END_JOB = (
    update(_JOBS)
    .where(_JOBS.c.id == bindparam("job"), _JOBS.c.state == JOB_PROCESSING)
    .values(state=bindparam("new_state"), reason=bindparam("why"), ended_at=bindparam("at"))
)
_THE_RUNNING_JOB = (
    _REQUESTS.c.id == bindparam("request"),
    _REQUESTS.c.state == PROCESSING,
    _REQUESTS.c.current_job_id == bindparam("job"),
)
_STORE_PROGRESS = (
    update(_REQUESTS)
    .where(*_THE_RUNNING_JOB)
    .values(
        progress_content=bindparam("content"),
        progress_reasoning=bindparam("reasoning"),
        progress_seq=_REQUESTS.c.progress_seq + 1,
    )
)
#: PostgreSQL: a progress's transaction moves no kudos, so its commit does not wait for the disk (decision 0023).
_STORE_PROGRESS_WITHOUT_FLUSH = _STORE_PROGRESS.where(COMMITS_WITHOUT_FLUSH)
_FINISH = (
    update(_REQUESTS)
    .where(*_THE_RUNNING_JOB, _REQUESTS.c.kudos_charged == 0)
    .values(state=DONE, reply=bindparam("reply"), finished_at=bindparam("at"), kudos_charged=bindparam("kudos"))
)
#: What the finish returns for this process's waiters (chat/finish.py): the claim's columns a final answer reads.
_CLAIM_COLUMNS = tuple(_REQUESTS.c[name] for name in CLAIM_COLUMNS)
_FINISH_RETURNING = _FINISH.returning(*_CLAIM_COLUMNS)
_RESTART = (
    update(_REQUESTS)
    .where(*_THE_RUNNING_JOB)
    .values(
        state=WAITING,
        fault_rc=bindparam("rc"),
        fault_message=bindparam("message"),
        current_job_id=None,
        progress_content=None,
        progress_reasoning=None,
    )
)
_FAULT = (
    update(_REQUESTS)
    .where(*_THE_RUNNING_JOB)
    .values(
        state=FAULTED,
        fault_rc=bindparam("rc"),
        fault_message=bindparam("message"),
        current_job_id=None,
        finished_at=bindparam("at"),
    )
)


def _submit_and_settle_statement(*, lock_first: bool, shared_key: bool):
    """PostgreSQL: an accepted reply in one statement: the job ends (compare-and-set from processing), and only
    then the request finishes, and only then kudos move with their entries. It answers how many jobs ended and
    requests finished; nothing is written unless both are 1.

    Without `lock_first` the caller holds the request's row lock already (a transaction). With it the statement
    takes that lock itself, first (the lock order of every transition: request, job, users), and only while
    the request still runs this job uncharged: the statement is a whole transaction in autocommit, and the
    rows it locks (the owner's balance, shared by every submit of the owner's workers) are held only while
    the database runs it, never across a round trip to this process. With `shared_key`, the charge is also added
    to what the request's shared key has utilized (accounts.paired_transfer_ctes)."""
    ready = []
    if lock_first:
        locked = (
            select(_REQUESTS.c.id)
            .where(*_THE_RUNNING_JOB, _REQUESTS.c.kudos_charged == 0)
            .with_for_update()
            .cte("locked")
        )
        ready = [exists(select(locked.c.id))]
    submitted = (
        update(_JOBS)
        .where(_JOBS.c.id == bindparam("job"), _JOBS.c.state == JOB_PROCESSING, *ready)
        .values(state=JOB_SUBMITTED, reason=None, ended_at=bindparam("at"))
        .returning(_JOBS.c.id)
        .cte("submitted")
    )
    finished = _FINISH.where(exists(select(submitted.c.id))).returning(_REQUESTS.c.id, *_CLAIM_COLUMNS).cte("finished")
    ctes = ([locked] if lock_first else []) + [
        submitted,
        finished,
        model_rows.forget_finished_cte(select(finished.c.id)),
    ]
    return select(
        select(func.count()).select_from(submitted).scalar_subquery().label("ended"),
        select(func.count()).select_from(finished).scalar_subquery().label("finished"),
        *(select(finished.c[column.name]).scalar_subquery().label(column.name) for column in _CLAIM_COLUMNS),
    ).add_cte(*ctes, *accounts.paired_transfer_ctes(exists(select(finished.c.id)), shared_key=shared_key))


#: By whether the request is paid with a shared key: the statements of every other request stay as they were.
_SUBMIT_AND_SETTLE = {paid: _submit_and_settle_statement(lock_first=False, shared_key=paid) for paid in (False, True)}
_LOCK_SUBMIT_AND_SETTLE = {
    paid: _submit_and_settle_statement(lock_first=True, shared_key=paid) for paid in (False, True)
}
_DUE_JOBS = select(_JOBS.c.id, _JOBS.c.request_id).where(
    _JOBS.c.state == JOB_PROCESSING, _JOBS.c.deadline_at < bindparam("now")
)


@dataclass(frozen=True)
class Changed:
    """What a transition leaves its caller to publish: the request, its new state, the models it waits for, and
    for a request that finished, what its waiters here may answer from (chat/finish.py)."""

    id: str
    state: str
    models: list[str]
    finish: Finish | None = None


@dataclass(frozen=True)
class OwnedJob:
    id: str
    request_id: str
    model: str
    worker_id: str
    owner_id: int
    #: The request's: PROGRESS_NOT_KEPT, or its progress posts are kept (horde/background).
    progress_log: int = PROGRESS_NOT_KEPT


#: Keeps a progress post of a request whose progress is kept, before the post's text is stored: (session, job,
#: content, reasoning) -> False when it ended the request instead (the post is then refused as for an ended job).
KeepProgress = Callable[[Session, OwnedJob, str, str], bool]


def owned_job(session: Session, owner: User | Identity, job_id: str) -> OwnedJob:
    """The job (as read, unlocked) when its worker belongs to `owner`."""
    row = precompiled.execute(session.connection(), _OWNED_JOB, {"job": job_id}).first()
    if row is None or row.owner_id != owner.id:
        raise errors.JobNotFound(f"No job '{job_id}' of a worker of this API key.")
    return OwnedJob(*row)


def _owned_job_and_locked_request(session: Session, owner: User | Identity, job_id: str) -> Any:
    """The job's request, read under its row lock (PostgreSQL) held until the transaction ends, when the job's
    worker belongs to `owner`; the row has the request's columns and job_id, job_model, job_worker_id and owner_id.

    Every transition of a request or of its jobs takes this lock first, so they happen one after the
    other whichever process runs them, and always in the same order (request, then job, then users),
    which cannot deadlock. SQLite needs no lock: its writers already run one at a time.
    """
    statement = _JOB_AND_LOCKED_REQUEST if is_postgresql(session) else _JOB_AND_REQUEST
    row = precompiled.execute(session.connection(), statement, {"job": job_id}).first()
    if row is None or row.owner_id != owner.id:
        raise errors.JobNotFound(f"No job '{job_id}' of a worker of this API key.")
    return row


def lock_request(session: Session, request_id: str) -> ChatRequest:
    """The request re-read under its row lock (see _owned_job_and_locked_request), as an ORM object: cancel."""
    return session.get_one(
        ChatRequest, request_id, populate_existing=True, with_for_update=True if is_postgresql(session) else None
    )


def progress(
    session: Session, owner: User | Identity, body: dict, keep: KeepProgress | None = None
) -> tuple[bool, str]:
    """Store the text so far in one conditional statement; (stop, request id), stop when the job is no longer
    its request's running job. A request whose progress is kept has `keep` run first, in the same transaction."""
    job = owned_job(session, owner, body["id"])
    content, reasoning = body.get("content") or "", body.get("reasoning_content") or ""
    if keep is not None and job.progress_log != PROGRESS_NOT_KEPT and not keep(session, job, content, reasoning):
        return True, job.request_id
    stored = (
        session.connection()
        .execute(
            _STORE_PROGRESS_WITHOUT_FLUSH if is_postgresql(session) else _STORE_PROGRESS,
            {"request": job.request_id, "job": job.id, "content": content, "reasoning": reasoning},
        )
        .rowcount
    )
    return stored != 1, job.request_id


def submit(
    session: Session,
    settings: Settings,
    owner: User | Identity,
    body: dict,
    *,
    before_settling: Callable[[Any], None] | None = None,
) -> tuple[int | None, str | None, Changed]:
    """(reward, None, change) when accepted; (None, violation, change) when refused.

    `before_settling` runs, with the locked request row, when the reply is accepted and before the kudos
    move: the users' rows are locked last, so a submit holds them the shortest (the owner's row is shared
    by every submit of the owner's workers). A refusal raised after it rolls back what it did too."""
    request = _owned_job_and_locked_request(session, owner, body["id"])
    reply = replies.reply_of(body)
    problem = replies.violation(request, reply)
    if problem:
        _end_job(session, request.job_id, JOB_REFUSED, problem)
        state = _restart_or_fault(
            session, settings, request, request.job_id, errors.ChatSubmitNonconformant.rc, problem
        )
        return None, problem, Changed(request.id, state or request.state, request.models)
    if before_settling is not None:
        before_settling(request)
    if is_postgresql(session):
        return _accept_in_one_statement(session, settings, request, reply)
    _end_job(session, request.job_id, JOB_SUBMITTED, None)
    if request.kudos_charged:
        raise errors.DuplicateGen("This request was already charged.")
    moved = replies.price(settings, request, reply)
    made = replies.moves(request, request.owner_id, moved, reply["usage"]["completion_tokens"])
    accounts.transfer(session, made, request_id=request.id, shared_key_id=request.shared_key_id)
    at = utcnow()
    params = {"request": request.id, "job": request.job_id, "reply": reply, "at": at, "kudos": moved.charge}
    finished = precompiled.execute(session.connection(), _FINISH_RETURNING, params).first()
    if finished is None:  # cannot happen under the lock; refuse (and roll back the transfer) if it does
        raise errors.AbortedGen("This job is no longer assigned to the worker.")
    model_rows.forget_finished(session, request.id)
    return moved.reward, None, _finished(request, reply, moved.charge, at, finished)


def read_for_submit(session: Session, owner: User | Identity, job_id: str) -> Any:
    """The job and its request as `submit` reads them, without a lock, for accept_alone."""
    row = precompiled.execute(session.connection(), _JOB_AND_REQUEST, {"job": job_id}).first()
    if row is None or row.owner_id != owner.id:
        raise errors.JobNotFound(f"No job '{job_id}' of a worker of this API key.")
    return row


def accept_alone(session: Session, settings: Settings, request: Any, body: dict) -> tuple[int, Changed] | None:
    """PostgreSQL, in autocommit: accept a conforming reply to an uncharged request in one statement that is its
    own transaction (_LOCK_SUBMIT_AND_SETTLE), from `request` as read_for_submit read it. What it reads of the
    request and the job (payload, tokens, model, owner) never changes after the claim; what may change (the
    states, the charge) is compared and set under the locks the statement takes.

    None, with nothing written, when the reply breaks the request's contract or the request was charged: those
    refusals write in several steps, so `submit` decides them in a transaction. A job that another call ended
    meanwhile gets submit's refusals, in its order."""
    reply = replies.reply_of(body)
    if request.kudos_charged or replies.violation(request, reply):
        return None
    moved = replies.price(settings, request, reply)
    params = _settlement_params(request, moved, reply) | {"request": request.id}
    statement = _LOCK_SUBMIT_AND_SETTLE[request.shared_key_id is not None]
    settled = precompiled.execute(session.connection(), statement, params).one()
    if not settled.finished:
        connection = session.connection()
        if precompiled.execute(connection, _JOB_STATE, {"job": request.job_id}).scalar() != JOB_PROCESSING:
            _refuse_ended_job(session, request.job_id)
        if precompiled.execute(connection, _KUDOS_CHARGED, {"request": request.id}).scalar():
            raise errors.DuplicateGen("This request was already charged.")
        raise errors.AbortedGen("This job is no longer assigned to the worker.")
    return moved.reward, _finished(request, reply, moved.charge, params["at"], settled)


def _accept_in_one_statement(
    session: Session, settings: Settings, request: Any, reply: dict
) -> tuple[int, None, Changed]:
    """PostgreSQL: the job's end, the request's finish and the settlement in one round trip (_SUBMIT_AND_SETTLE).
    The same refusals as the step-by-step path, in the same order; any of them rolls the whole statement back."""
    if request.kudos_charged:  # the step-by-step path's refusals, in its order: the job's own first
        if precompiled.execute(session.connection(), _JOB_STATE, {"job": request.job_id}).scalar() != JOB_PROCESSING:
            _refuse_ended_job(session, request.job_id)
        raise errors.DuplicateGen("This request was already charged.")
    moved = replies.price(settings, request, reply)
    params = _settlement_params(request, moved, reply)
    settled = precompiled.execute(session.connection(), _SUBMIT_AND_SETTLE[request.shared_key_id is not None], params)
    settled = settled.one()
    if not settled.ended:
        _refuse_ended_job(session, request.job_id)
    if not settled.finished:  # cannot happen under the lock; refuse (and roll back the job's end) if it does
        raise errors.AbortedGen("This job is no longer assigned to the worker.")
    return moved.reward, None, _finished(request, reply, moved.charge, params["at"], settled)


def _settlement_params(request: Any, moved: replies.Amounts, reply: dict) -> dict[str, Any]:
    """The bind parameters of a settling statement (_SUBMIT_AND_SETTLE, _LOCK_SUBMIT_AND_SETTLE) but the request's."""
    made = replies.moves(request, request.owner_id, moved, reply["usage"]["completion_tokens"])
    params = accounts.paired_transfer_params(made, request_id=request.id, shared_key_id=request.shared_key_id)
    return params | {"job": request.job_id, "reply": reply, "kudos": moved.charge}


def _finished(request: Any, reply: dict, kudos: int, at: dt.datetime, claim: Any) -> Changed:
    """The change of a request that finished, with what its waiters here may answer from (chat/finish.py)."""
    return Changed(request.id, DONE, request.models, Finish.of(reply, kudos, at, claim))


def fault(session: Session, settings: Settings, owner: User | Identity, body: dict) -> Changed:
    request = _owned_job_and_locked_request(session, owner, body["id"])
    _end_job(session, request.job_id, JOB_FAULTED, body["reason"])
    state = _restart_or_fault(session, settings, request, request.job_id, errors.ChatWorkerFault.rc, body["reason"])
    return Changed(request.id, state or request.state, request.models)


def expire_jobs(session: Session, settings: Settings) -> list[Changed]:
    """Abort every job past its ttl and restart (or fault) its request.

    Requests another transaction holds (a submit, a cancel, another expiry) are skipped: that transaction
    settles them, and a later sweep catches any that are still due.
    """
    now, connection = utcnow(), session.connection()
    lock = _LOCK_REQUEST_UNLESS_HELD if is_postgresql(session) else _READ_REQUEST
    reason = f"The worker did not submit the job within its ttl of {int(settings.job_ttl_s)} s."
    changed = []
    for job_id, request_id in precompiled.execute(connection, _DUE_JOBS, {"now": now}).all():
        request = precompiled.execute(connection, lock, {"request": request_id}).first()
        if request is None or not _try_end_job(session, job_id, JOB_ABORTED, reason):
            continue
        state = _restart_or_fault(session, settings, request, job_id, errors.ChatJobExpired.rc, reason)
        if state is not None:
            changed.append(Changed(request.id, state, request.models))
    return changed


def cancel(
    session: Session,
    settings: Settings,
    request: ChatRequest,
    *,
    streamed_chars: int = 0,
    rc: str | None = None,
    message: str | None = None,
) -> bool:
    """Cancel a request; charge what was streamed before the cancel. False when it had already ended.

    Under the request's lock, so a concurrent submit either lands first (the request is done, charged for its
    reply, and this is False) or finds its job cancelled (AbortedGen, nothing but the streamed part charged).
    `rc` and `message` record why the Horde itself cancelled it (a worker gap), so that a replay answers the same.
    """
    request = lock_request(session, request.id)
    if request.state in FINAL_STATES:
        return False
    request.fault_rc, request.fault_message = rc, message
    job = session.get(ChatJob, request.current_job_id, populate_existing=True) if request.current_job_id else None
    if (
        job is not None
        and _try_end_job(session, job.id, JOB_CANCELLED, "The request was cancelled.")
        and streamed_chars
    ):
        _charge_streamed(session, settings, request, job, streamed_chars)
    request.state, request.finished_at = CANCELLED, utcnow()
    return True


def _charge_streamed(
    session: Session, settings: Settings, request: ChatRequest, job: ChatJob, streamed_chars: int
) -> None:
    """A cancelled stream pays for what reached its client, once."""
    if request.kudos_charged:
        raise errors.DuplicateGen("This request was already charged.")
    tokens = max(1, streamed_chars // 4)
    kudos = pricing.price(
        job.model,
        completion_tokens=tokens,
        prompt_tokens=request.prompt_tokens,
        n_images=request.n_images,
        reference_path=settings.model_reference_path,
    )
    moved = replies.amounts(settings, request, kudos)
    owner_id = session.get_one(Worker, job.worker_id).owner_id
    made = replies.moves(request, owner_id, moved, tokens)
    accounts.transfer(session, made, request_id=request.id, shared_key_id=request.shared_key_id)
    request.kudos_charged = moved.charge


def _try_end_job(session: Session, job_id: str, state: str, reason: str | None) -> bool:
    """Compare-and-set: end the job only from `processing`. False when another call ended it first."""
    ended = precompiled.execute(
        session.connection(), _END_JOB, {"job": job_id, "new_state": state, "why": reason, "at": utcnow()}
    )
    return ended.rowcount == 1


def _end_job(session: Session, job_id: str, state: str, reason: str | None) -> None:
    """As _try_end_job, raising the refusal that matches the state another call left."""
    if not _try_end_job(session, job_id, state, reason):
        _refuse_ended_job(session, job_id)


def _refuse_ended_job(session: Session, job_id: str) -> None:
    """The refusal for a job that another call ended first."""
    if precompiled.execute(session.connection(), _JOB_STATE, {"job": job_id}).scalar() == JOB_SUBMITTED:
        raise errors.DuplicateGen("This job was already submitted.")
    raise errors.AbortedGen("This job is no longer assigned to the worker.")


def _restart_or_fault(
    session: Session, settings: Settings, request: Any, job_id: str, rc: str, message: str
) -> str | None:
    """Put the request back in the queue, or fault it after its last attempt; its new state, or None when the
    job was no longer the request's running one. A request whose kept progress showed text (a background-streamed
    response's) is faulted at once: what a client read cannot be taken back to start over."""
    final = request.attempts >= settings.max_attempts or request.progress_log == PROGRESS_KEPT_SHOWN
    statement, state = (_FAULT, FAULTED) if final else (_RESTART, WAITING)
    params = {"request": request.id, "job": job_id, "rc": rc, "message": message, "at": utcnow()}
    return state if precompiled.execute(session.connection(), statement, params).rowcount == 1 else None
