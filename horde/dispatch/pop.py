"""The chat pop: check in, claim the best job, or long-poll for one.

Above chat and text (the dispatch layer): a worker's chat and text jobs share its threads (horde/text/threads.py).
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from sqlalchemy import case, func, literal, select
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session

from horde import errors
from horde.accounts.identity import Identity
from horde.chat import affinity
from horde.chat import claim as chat_claim
from horde.chat.eligibility import ELIGIBLE_FOR_WORKER, LISTS_THE_WORKER, worker_params
from horde.chat.models import WAITING, ChatRequest, ChatRequestModel
from horde.events.bus import jobs_channel, progress_channel
from horde.events.drain import DRAIN
from horde.http import request_json
from horde.http.client_connection import requester_gone
from horde.http.payload import RepeatedBodies
from horde.http.request_context import caller_address
from horde.observability.record import note
from horde.queueing.model_rows import of_its_request
from horde.storage import precompiled
from horde.storage.database import table_of
from horde.text.threads import BUSY
from horde.workers import duty
from horde.workers import service as workers
from horde.workers.checkins import WorkerView
from horde.workers.declarations import ALL_FEATURES_MASK, ALL_GUARANTEES_MASK
from horde.workers.schemas import POP_SCHEMA
from horde.workers.service import worker_owner

if TYPE_CHECKING:
    from horde.runtime import Runtime

LONG_POLL_RECHECK_S = 5.0
NEXT_JOB_FAILED_MESSAGE = "The next job could not be claimed; the call itself succeeded. Pop again."
log = logging.getLogger(__name__)
#: A pop's first look, in one round trip: its busy threads and whether its models have a queue at all.
_BUSY_THREADS_AND_QUEUE = select(BUSY, chat_claim.ANY_WAITING_FOR)
#: PostgreSQL: the same look also prepares the claim's plan for the rest of the transaction.
_BUSY_THREADS_AND_QUEUE_WALKING = select(
    BUSY, chat_claim.ANY_WAITING_FOR, chat_claim.WALK_THE_INDEX, *chat_claim.PROBE_BY_KEY
)
#: PostgreSQL, a pop with nothing to write (on the walking pool): the look and the claim in one round trip.
_LOOK_AND_CLAIM = chat_claim.look_and_claim_statement(BUSY)
#: A worker sends the same pop body every time: loaded once.
POP_BODIES = RepeatedBodies(POP_SCHEMA)


def pop(runtime: Runtime, api_key: str | None, raw_body: bytes) -> dict:
    """POST /pop: validate, authenticate, then `serve`."""
    try:
        request = POP_BODIES.load(raw_body)
    except errors.BadRequest:
        note(worker=_name_in(raw_body))  # a refused pop's log line still names the worker that sent it
        raise
    note(worker=request["name"])
    return serve(runtime, worker_owner(runtime, api_key), request)


def _name_in(raw_body: bytes) -> object:
    """The `name` a refused pop body gives, if it is a JSON object at all."""
    try:
        body = request_json.parse(raw_body)
    except errors.BadRequest:
        return None
    return body.get("name") if isinstance(body, dict) else None


def next_job(runtime: Runtime, owner: Identity, request: dict) -> dict:
    """The pop a submit or fault carried (validated with it), run once that call has committed: what /pop
    would answer, or no job and the pop's refusal (a name another owner holds, the database lost or refusing
    a statement meanwhile), since the call it rode on succeeded and must not be answered as failed."""
    try:
        return serve(runtime, owner, request)
    except errors.HordeError as refusal:
        return {"id": None, **refusal.to_native()}
    except SQLAlchemyError:
        log.exception("the pop carried by a worker's call failed after the call committed")
        return {"id": None, **errors.InternalError(NEXT_JOB_FAILED_MESSAGE).to_native()}


def serve(runtime: Runtime, owner: Identity, request: dict) -> dict:
    """Claim a job for a loaded pop body, long-polling up to `wait` s. An announced job wakes one poller;
    one that finds nothing it may take while requests wait for its models passes the announcement on."""
    deadline = time.monotonic() + request["wait"]
    channels = [jobs_channel(model) for model in request["models"]] + _own_channel(runtime, owner, request)
    woken = False
    with runtime.bus.subscribe(*channels, single=True) as subscription:
        while True:
            last_try = deadline - time.monotonic() <= 0
            subscription.mark_seen()
            result, queued = _pop_once(runtime, owner, request, explain=last_try)
            if result["id"] is not None or DRAIN.ending:
                return result
            # A look that saw no request waiting for the worker's models answers for the announcement that
            # woke it (taken meantime): one queued later comes with an announcement of its own.
            if woken and queued and _others_may_serve(runtime, request["models"]):
                subscription.pass_on()
            if last_try:
                return result
            woken = subscription.wait(max(0.0, min(deadline - time.monotonic(), LONG_POLL_RECHECK_S)))
            if requester_gone():  # nobody would run what it claims: the announcement goes to another
                if woken:
                    subscription.pass_on()
                return {"id": None, "skipped": {}}


def _own_channel(runtime: Runtime, owner: Identity, request: dict) -> list[str]:
    """Where the requests reserved for this worker are announced (horde/chat/affinity.py), once it is known."""
    worker = runtime.checkins.known(owner.id, request["name"])
    return [] if worker is None else [affinity.worker_channel(worker.id)]


def _others_may_serve(runtime: Runtime, models: list[str]) -> bool:
    with runtime.db.read() as session:
        return chat_claim.any_waiting_for(session, models)


def pop_once(runtime: Runtime, owner: Identity | str | None, request: dict, *, explain: bool = True) -> dict:
    """One check-in and claim. `explain` computes the skipped counts of an empty pop, which scan
    the queue; a long-poll asks for them only on its last try. Expiry is the sweeper's job."""
    return _pop_once(runtime, owner, request, explain=explain)[0]


def _pop_once(runtime: Runtime, owner: Identity | str | None, request: dict, *, explain: bool) -> tuple[dict, bool]:
    """pop_once's answer, and whether its look saw requests waiting for the worker's models."""
    if not isinstance(owner, Identity):  # an API key
        owner = worker_owner(runtime, owner)
    worker = remembered_worker(runtime, owner, request)
    checked_in, started = worker is None, time.monotonic()
    if worker is not None and runtime.db.is_postgresql:
        # Nothing to write for the check-in: the look and the claim need no transaction around them (the
        # claim is one statement), so they run in autocommit, planned to walk the queue's index.
        with runtime.db.autocommit(walk_indexes=True) as session:
            result, claimed, queued = claim_or_explain(
                runtime, session, worker, owner.trusted, explain=explain, plan_in_transaction=False
            )
    else:
        with runtime.db.transaction() as session:
            worker = worker or WorkerView.of(workers.check_in(session, owner, request, caller_address()))
            result, claimed, queued = claim_or_explain(runtime, session, worker, owner.trusted, explain=explain)
    if checked_in:
        runtime.checkins.remember(request, worker, started)
    for off_duty in duty.REFUSALS:  # after the commit: the check-in stands
        if result.get("rc") == off_duty.rc:
            raise off_duty(result["message"])
    if claimed is not None:
        runtime.claimed_jobs.remember(claimed, worker.id, owner.id)
        runtime.snapshots.queue_changed()  # after the commit: a view taken again now sees the claim
        runtime.bus.publish(progress_channel(claimed.request_id))
    return result, queued


def remembered_worker(runtime: Runtime, owner: Identity, request: dict) -> WorkerView | None:
    """The worker as last checked in, when checking in again now would change nothing (no write is due)."""
    return runtime.checkins.current(owner.id, request, runtime.settings.worker_online_window_s)


def claim_or_explain(
    runtime: Runtime,
    session: Session,
    worker: WorkerView,
    trusted: bool,
    *,
    explain: bool,
    ending_jobs: int = 0,
    plan_in_transaction: bool = True,
) -> tuple[dict[str, Any], chat_claim.Claimed | None, bool]:
    """The pop's answer and the job it claimed, if any, in the caller's transaction (a pop's, or a submit's
    that carried the pop: horde/dispatch/worker_calls.py), or in autocommit on the index-walking pool (a pop
    whose check-in is remembered, on PostgreSQL). The caller publishes the claim after its commit.
    `ending_jobs`: the worker's running jobs that the caller's transaction ends before it commits (a submit
    claims before it settles), which no longer hold a thread. `plan_in_transaction`: on PostgreSQL, the first
    look sets the claim's plan for the rest of the transaction (the walking pool's sessions have it already).
    Also whether the look saw requests waiting for the worker's models (a long-poll's pass-on asks)."""
    if not plan_in_transaction:  # the walking pool's session: the look and the claim are one statement
        busy, queued, claimed = chat_claim.look_and_claim(session, runtime.settings, worker, trusted, _LOOK_AND_CLAIM)
        if claimed is None:
            return _not_claimed(runtime, session, worker, trusted, busy, queued, explain=explain), None, queued
        return _job_answer(runtime, claimed, worker), claimed, queued
    # Text jobs share the worker's threads.
    walk = runtime.db.is_postgresql
    first_look = _BUSY_THREADS_AND_QUEUE_WALKING if walk else _BUSY_THREADS_AND_QUEUE
    busy, queued, *_ = precompiled.execute(
        session.connection(), first_look, {"worker": worker.id, "worker_models": list(worker.models)}
    ).one()
    busy -= ending_jobs
    queued = bool(queued)
    if busy >= worker.threads or not queued:  # all threads busy, or the common empty pop
        return _not_claimed(runtime, session, worker, trusted, busy, queued, explain=explain), None, queued
    claimed = chat_claim.claim(session, runtime.settings, worker, trusted, skip_locked=runtime.db.is_postgresql)
    if claimed is None:
        return _not_claimed(runtime, session, worker, trusted, busy, queued, explain=explain), None, queued
    return _job_answer(runtime, claimed, worker), claimed, queued


def _job_answer(runtime: Runtime, claimed: chat_claim.Claimed, worker: WorkerView) -> dict[str, Any]:
    return {
        "id": claimed.job_id,
        "model": claimed.model,
        "ttl": int(runtime.settings.job_ttl_s),
        "payload": chat_claim.worker_payload(claimed, worker),
    }


def _not_claimed(
    runtime: Runtime, session: Session, worker: WorkerView, trusted: bool, busy: int, queued: bool, *, explain: bool
) -> dict[str, Any]:
    """An empty pop's answer: the worker off duty (in maintenance or its owner flagged: the AI Horde's refusal, which
    /pop raises; paused or deleted: no job), its threads all busy, or with `explain` why the waiting requests were
    not its."""
    if duty.is_off_duty(busy):
        refusal = duty.refusal(session, worker.id)
        return {"id": None, **(refusal.to_native() if refusal else {"skipped": {}})}
    if busy >= worker.threads:
        return {"id": None, "skipped": {"threads": busy}}
    if not explain:
        return {"id": None, "skipped": {}}
    if not queued:
        return {"id": None, "skipped": _waiting_for_other_models(runtime, session)}
    return {"id": None, "skipped": skipped_counts(runtime, session, worker, trusted)}


def _waiting_for_other_models(runtime: Runtime, session: Session) -> dict[str, int]:
    """The skipped counts of a worker whose models have no queue: every waiting request, under `models`.

    Counted at most once a second per process, and again after this process's own admissions and claims
    (runtime.snapshots): the count reads the whole queue, and the empty pops of every idle worker ask for it."""
    waiting = runtime.snapshots.waiting_total(session)
    return {"models": waiting} if waiting else {}


def skipped_counts(runtime: Runtime, session: Session, worker: WorkerView, trusted: bool) -> dict:
    """Why the waiting requests were not given to this worker, by first failing reason. Only the requests of its
    models are read, by their model rows; the others (`models`) are the waiting total (runtime.snapshots) less
    those, so an empty pop's cost does not grow with a backlog for models it does not serve."""
    if not chat_claim.any_waiting_for(session, worker.models):
        return _waiting_for_other_models(runtime, session)
    # The requests of its models from their model rows, each one's first failing reason read by its key (a scalar
    # subquery, never a join, which a planner without statistics turns into a read of every waiting request).
    mine = (
        select(ChatRequestModel.request_id)
        .where(ChatRequestModel.model.in_(list(worker.models)))
        .distinct()
        .subquery("mine")
    )
    missing_features = ALL_FEATURES_MASK & ~worker.features_mask
    missing_guarantees = ALL_GUARANTEES_MASK & ~worker.guarantees_mask
    reasons = [
        ("max_length", ChatRequest.max_tokens > worker.max_length),
        ("max_context_length", ChatRequest.context_tokens > worker.max_context_length),
        ("features", ChatRequest.required_features.op("&")(missing_features) != 0),
        ("guarantees", ChatRequest.required_guarantees.op("&")(missing_guarantees) != 0),
        ("worker_id", ChatRequest.only_workers.is_not(None) & ~LISTS_THE_WORKER),
        ("untrusted", ChatRequest.trusted_only.is_(True) & literal(not trusted)),
    ]
    if worker.max_temperature_with_tools is not None:
        reasons.append(("limits", ChatRequest.tools_temperature > worker.max_temperature_with_tools))
    first_reason = case(*[(condition, name) for name, condition in reasons], (ELIGIBLE_FOR_WORKER, ""), else_="other")
    # The state as a literal: the walking pool plans once for any values, which for a bound state would read the
    # Horde's history of finished requests (decision 0025).
    waiting = ChatRequest.state == literal(WAITING, literal_execute=True)
    waiting_reason = of_its_request(table_of(ChatRequest), mine, first_reason, waiting)
    by_request = select(waiting_reason.label("reason")).select_from(mine).subquery("by_request")
    rows = session.execute(
        select(by_request.c.reason, func.count()).where(by_request.c.reason.is_not(None)).group_by(by_request.c.reason),
        worker_params(worker, trusted),
    ).all()
    counts = {reason: count for reason, count in rows if reason and count}
    of_other_models = runtime.snapshots.waiting_total(session) - sum(count for _, count in rows)
    return {"models": of_other_models, **counts} if of_other_models > 0 else counts
