"""A request's life after admission: claim, progress, submit, fault, expiry, cancel.

Functions take a session inside the caller's transaction and return what the
caller must publish; they never commit.
"""

from __future__ import annotations

import datetime as dt

from sqlalchemy import func, select, text, update
from sqlalchemy.orm import Session
from sqlalchemy.orm.attributes import set_committed_value

from horde import errors
from horde.accounts import service as accounts
from horde.accounts.identity import Identity
from horde.accounts.models import User
from horde.chat import conformance, pricing, queue
from horde.chat.eligibility import QUEUE_ORDER, queue_filter
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
    WAITING,
    ChatJob,
    ChatRequest,
)
from horde.config import Settings
from horde.database import is_postgresql, rows_changed
from horde.timeutil import utcnow
from horde.workers.checkins import WorkerView
from horde.workers.declarations import FEATURE_BITS
from horde.workers.models import Worker

DEFAULT_REASONING_EFFORT = "medium"


def claim(
    session: Session, settings: Settings, worker: Worker | WorkerView, trusted: bool, *, skip_locked: bool
) -> tuple[ChatJob, ChatRequest] | None:
    """Claim the best eligible waiting request for `worker`: priority class, kudos, then age."""
    if not queue.any_waiting_for(session, worker.models):
        return None
    query = select(ChatRequest).where(queue_filter(worker, trusted)).order_by(*QUEUE_ORDER).limit(1)
    if skip_locked:  # PostgreSQL
        query = query.with_for_update(skip_locked=True, of=ChatRequest)
        # The planner cannot estimate the bit-mask filters and would sort the whole queue; walking
        # ix_chat_requests_queue in order stops at the first eligible request instead.
        session.execute(text("SET LOCAL enable_sort = off"))
        request = session.scalar(query)
        session.execute(text("SET LOCAL enable_sort = on"))
    else:
        request = session.scalar(query)
    if request is None:
        return None
    model = next(model for model in request.models if model in worker.models)
    now = utcnow()
    job = ChatJob(
        request_id=request.id,
        worker_id=worker.id,
        model=model,
        started_at=now,
        deadline_at=now + dt.timedelta(seconds=settings.job_ttl_s),
    )
    session.add(job)
    session.flush()
    request.state = PROCESSING
    request.attempts += 1
    request.current_job_id = job.id
    request.worker_id, request.worker_name, request.served_model = worker.id, worker.name, model
    request.progress_content = request.progress_reasoning = None
    return job, request


def jobs_in_flight(session: Session, worker: Worker | WorkerView) -> int:
    return (
        session.scalar(
            select(func.count(ChatJob.id)).where(ChatJob.worker_id == worker.id, ChatJob.state == JOB_PROCESSING)
        )
        or 0
    )


def worker_payload(request: ChatRequest, worker: Worker | WorkerView) -> dict:
    payload = dict(request.payload)
    payload["max_context_length"] = request.context_tokens
    if "reasoning_effort" not in payload and worker.features_mask & FEATURE_BITS["reasoning_effort"]:
        payload["reasoning_effort"] = DEFAULT_REASONING_EFFORT
    return payload


def owned_job(session: Session, owner: User | Identity, job_id: str) -> tuple[ChatJob, Worker]:
    """The job (as read, unlocked) and its worker, when the worker belongs to `owner`."""
    job = session.get(ChatJob, job_id)
    worker = session.get(Worker, job.worker_id) if job else None
    if job is None or worker is None or worker.owner_id != owner.id:
        raise errors.JobNotFound(f"No job '{job_id}' of a worker of this API key.")
    return job, worker


def lock_request(session: Session, request_id: str) -> ChatRequest:
    """The request re-read under its row lock (PostgreSQL), held until the transaction ends.

    Every transition of a request or of its jobs takes this lock first, so they happen one after the
    other whichever process runs them, and always in the same order (request, then job, then users),
    which cannot deadlock. SQLite needs no lock: its writers already run one at a time.
    """
    return session.get_one(
        ChatRequest, request_id, populate_existing=True, with_for_update=True if is_postgresql(session) else None
    )


def _lock_request_unless_held(session: Session, request_id: str) -> ChatRequest | None:
    """As `lock_request`, but None at once when another transaction holds the request (SKIP LOCKED)."""
    lock = {"skip_locked": True} if is_postgresql(session) else None
    return session.get(ChatRequest, request_id, populate_existing=True, with_for_update=lock)


def _running_job(session: Session, job: ChatJob) -> ChatJob:
    """`job` re-read after its request's lock; refuses a job that is no longer running."""
    session.refresh(job)
    if job.state == JOB_SUBMITTED:
        raise errors.DuplicateGen("This job was already submitted.")
    if job.state != JOB_PROCESSING:
        raise errors.AbortedGen(f"This job is no longer assigned to the worker (it is {job.state}).")
    return job


def progress(session: Session, owner: User | Identity, body: dict) -> tuple[bool, str]:
    """Store the text so far in one conditional statement; (stop, request id), stop when the job is no longer
    its request's running job."""
    job, _ = owned_job(session, owner, body["id"])
    running = (ChatRequest.id == job.request_id, ChatRequest.current_job_id == job.id, ChatRequest.state == PROCESSING)
    stored = rows_changed(
        session,
        update(ChatRequest)
        .where(*running)
        .values(
            progress_content=body.get("content") or "",
            progress_reasoning=body.get("reasoning_content") or "",
            progress_seq=ChatRequest.progress_seq + 1,
        ),
    )
    return stored != 1, job.request_id


def submit(
    session: Session, settings: Settings, owner: User | Identity, body: dict
) -> tuple[int | None, str | None, ChatRequest]:
    """(reward, None, request) when accepted; (None, violation, request) when refused."""
    job, worker = owned_job(session, owner, body["id"])
    request = lock_request(session, job.request_id)
    job = _running_job(session, job)
    reply = {key: body.get(key) for key in ("content", "reasoning_content", "tool_calls", "finish_reason", "usage")}
    problem = conformance.violation(request.payload, reply, strict=bool(request.required_guarantees))
    if problem:
        _end_job(session, job, JOB_REFUSED, problem)
        _restart_or_fault(request, settings, errors.ChatSubmitNonconformant.rc, problem)
        return None, problem, request
    _end_job(session, job, JOB_SUBMITTED, None)
    usage = dict(reply.get("usage") or {})
    usage.setdefault("prompt_tokens", request.prompt_tokens)
    usage["completion_tokens"] = pricing.billable_completion_tokens(
        usage.get("completion_tokens"), reply, request.max_tokens
    )
    if usage.get("reasoning_tokens") is not None:
        usage["reasoning_tokens"] = min(usage["reasoning_tokens"], usage["completion_tokens"])
    reply["usage"] = usage
    reply["finish_reason"] = reply.get("finish_reason") or "stop"
    kudos = pricing.price(
        job.model,
        completion_tokens=usage["completion_tokens"],
        prompt_tokens=request.prompt_tokens,
        n_images=request.n_images,
        reference_path=settings.model_reference_path,
    )
    _settle(session, request, worker, kudos)
    request.reply = reply
    request.state, request.finished_at = DONE, utcnow()
    return kudos, None, request


def fault(session: Session, settings: Settings, owner: User | Identity, body: dict) -> ChatRequest:
    job, _ = owned_job(session, owner, body["id"])
    request = lock_request(session, job.request_id)
    job = _running_job(session, job)
    _end_job(session, job, JOB_FAULTED, body["reason"])
    _restart_or_fault(request, settings, errors.ChatWorkerFault.rc, body["reason"])
    return request


def expire_jobs(session: Session, settings: Settings) -> list[ChatRequest]:
    """Abort every job past its ttl and restart (or fault) its request.

    Requests another transaction holds (a submit, a cancel, another expiry) are skipped: that transaction
    settles them, and a later sweep catches any that are still due.
    """
    now = utcnow()
    due = session.execute(
        select(ChatJob.id, ChatJob.request_id).where(ChatJob.state == JOB_PROCESSING, ChatJob.deadline_at < now)
    ).all()
    changed = []
    for job_id, request_id in due:
        request = _lock_request_unless_held(session, request_id)
        job = session.get(ChatJob, job_id, populate_existing=True) if request is not None else None
        if request is None or job is None or job.state != JOB_PROCESSING or job.deadline_at >= now:
            continue
        reason = f"The worker did not submit the job within its ttl of {int(settings.job_ttl_s)} s."
        _end_job(session, job, JOB_ABORTED, reason)
        if request.current_job_id == job.id and request.state == PROCESSING:
            _restart_or_fault(request, settings, errors.ChatJobExpired.rc, reason)
            changed.append(request)
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
    if job is not None and job.state == JOB_PROCESSING:
        _end_job(session, job, JOB_CANCELLED, "The request was cancelled.")
        if streamed_chars:
            kudos = pricing.price(
                job.model,
                completion_tokens=max(1, streamed_chars // 4),
                prompt_tokens=request.prompt_tokens,
                n_images=request.n_images,
                reference_path=settings.model_reference_path,
            )
            _settle(session, request, session.get_one(Worker, job.worker_id), kudos)
    request.state, request.finished_at = CANCELLED, utcnow()
    return True


def _settle(session: Session, request: ChatRequest, worker: Worker, kudos: int) -> None:
    """Charge the requester and reward the worker's owner, once per request.

    The two rows are updated in user-id order, so two settlements never wait on each other crosswise.
    """
    if request.kudos_charged:
        raise errors.DuplicateGen("This request was already charged.")
    moves = sorted([(request.user_id, -kudos, "charge"), (worker.owner_id, kudos, "reward")])
    for user_id, amount, kind in moves:
        accounts.move_kudos(session, session.get_one(User, user_id), amount, kind=kind, request_id=request.id)
    request.kudos_charged = kudos


def _end_job(session: Session, job: ChatJob, state: str, reason: str | None) -> None:
    """Compare-and-set: end the job only from `processing`; anything else means another call settled it."""
    ended_at = utcnow()
    ended = rows_changed(
        session,
        update(ChatJob)
        .where(ChatJob.id == job.id, ChatJob.state == JOB_PROCESSING)
        .values(state=state, reason=reason, ended_at=ended_at),
    )
    if ended != 1:
        _running_job(session, job)  # raises the refusal that matches the state another call left
        raise errors.AbortedGen("This job is no longer assigned to the worker.")
    for key, value in (("state", state), ("reason", reason), ("ended_at", ended_at)):
        set_committed_value(job, key, value)


def _restart_or_fault(request: ChatRequest, settings: Settings, rc: str, message: str) -> None:
    request.fault_rc, request.fault_message = rc, message
    request.current_job_id = None
    if request.attempts >= settings.max_attempts:
        request.state, request.finished_at = FAULTED, utcnow()
    else:
        request.state = WAITING
        request.progress_content = request.progress_reasoning = None
