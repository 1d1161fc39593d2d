"""Client-side chat operations shared by the native routes and the OpenAI front."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from sqlalchemy.orm import Session

from horde import errors
from horde.accounts.identity import Identity
from horde.authz.check import authorize
from horde.authz.rules import Action
from horde.chat import (
    admission,
    affinity,
    conversation,
    images,
    lifecycle,
    model_rows,
    queue,
    request_rows,
    stats,
    tiers,
)
from horde.chat.models import DONE, PROCESSING, PROGRESS_KEPT, PROGRESS_NOT_KEPT, WAITING, ChatRequest
from horde.config import Settings
from horde.events.bus import announce_jobs, request_channel
from horde.oversight import gate
from horde.stats import rollup
from horde.timeutil import utcnow
from horde.workers import service as workers
from horde.workers.declarations import features_mask

if TYPE_CHECKING:
    from horde.chat.parts import ChatParts
    from horde.chat.snapshots import Snapshots


def create(
    runtime: ChatParts,
    user: Identity,
    native: dict,
    *,
    client_agent: str = "unknown:0:unknown",
    model_param: str | None = None,
    body_hash: str | None = None,
    holders: int = 0,
    client_address: str | None = None,
    request_id: str | None = None,
    inherited_conversation: str | None = None,
    keep_progress: bool = False,
    tier: tiers.Tier = tiers.INTERACTIVE,
) -> ChatRequest:
    """Validate, fetch images (outside any transaction), admit and queue; publish the new job.

    `request_id`: the new request's id, when the caller listens to its channel before it exists.
    `inherited_conversation`: the stored key of the conversation the request continues, when the request names
    none itself (horde/chat/conversation.py). `keep_progress`: every progress post is kept in order
    (horde/background), for a stream that any process replays. `tier`: interactive, flex, or a batch line's
    (horde/chat/tiers.py)."""
    authorize(user, Action.GENERATE)
    gate.admit_generation(runtime.oversight.current(), user, runtime.settings.raid_new_account_s)
    if isinstance(native, dict):
        admission.check_message_count(native.get("messages"), runtime.settings)
    native = admission.validate(native)
    conversation_key = conversation.of_request(user.id, native, inherited_conversation)
    images.check_count(native["messages"], runtime.settings.max_images_per_request)
    native["messages"] = images.copy_for_inlining(native["messages"])
    images.inline_images(native["messages"], runtime.settings)
    with runtime.db.transaction() as session:
        request = admission.admit(
            session,
            runtime.settings,
            user,
            native,
            client_agent=client_agent,
            model_param=model_param,
            client_address=client_address,
            snapshots=runtime.snapshots,
            body_hash=body_hash,
            holders=holders,
            request_id=request_id,
            roster_generation=runtime.checkins.generation,
            conversation_key=conversation_key,
            progress_log=PROGRESS_KEPT if keep_progress else PROGRESS_NOT_KEPT,
            tier=tier,
        )
    runtime.snapshots.queue_changed()
    announce(runtime, request)
    return request


def announce(runtime: ChatParts, request: ChatRequest) -> None:
    """Wake the workers that may take the new request: its reserved worker alone until its reservation ends,
    then every worker of its models (horde/chat/affinity.py); without a reservation, those workers at once."""
    if request.reserved_worker_id is None or request.reserved_until is None:
        announce_jobs(runtime.bus, request.models)
        return
    runtime.bus.publish(affinity.worker_channel(request.reserved_worker_id))
    wait_s = (request.reserved_until - utcnow()).total_seconds()
    models = list(request.models)  # not the request: the timer would hold its prompt until it runs
    runtime.affinity_wakeups.at(time.monotonic() + wait_s, lambda: announce_jobs(runtime.bus, models))


def served_with(runtime: ChatParts, model: str, feature: str) -> bool:
    """Whether an online worker (as this process saw them within a second) serves `model` and declares `feature`:
    for a dialect that turns a client's hint into a requirement only where some worker can meet it."""
    bit = features_mask([feature])
    with runtime.db.read() as session:
        online, _ = runtime.snapshots.online(session, runtime.settings.worker_online_window_s)
    return any(model in worker.models and worker.features_mask & bit for worker in online)


def load_owned(session: Session, user: Identity, request_id: str) -> ChatRequest:
    return _owned(session.get(ChatRequest, request_id), user, request_id)


def _owned(request: ChatRequest | None, user: Identity, request_id: str) -> ChatRequest:
    if request is None or request.user_id != user.id:
        raise errors.RequestNotFound(f"No chat request '{request_id}' of this API key.")
    return request


def status(runtime: ChatParts, user: Identity, request_id: str) -> dict:
    with runtime.db.read() as session:
        request = _owned(request_rows.read_request(session, request_id), user, request_id)
        return status_view(session, runtime.settings, request)


def read(runtime: ChatParts, request_id: str) -> ChatRequest | None:
    """The request as committed now, transient: read it, never add it to a session."""
    with runtime.db.read() as session:
        return request_rows.read_request(session, request_id)


def cancel(
    runtime: ChatParts,
    user: Identity | None,
    request_id: str,
    *,
    streamed_chars: int = 0,
    reason: errors.HordeError | None = None,
) -> ChatRequest:
    if user is not None:
        authorize(user, Action.MANAGE_OWN_REQUEST)
    with runtime.db.transaction() as session:
        request = session.get(ChatRequest, request_id) if user is None else load_owned(session, user, request_id)
        if request is None:
            raise errors.RequestNotFound(f"No chat request '{request_id}'.")
        lifecycle.cancel(
            session,
            runtime.settings,
            request,
            streamed_chars=streamed_chars,
            rc=reason.rc if reason else None,
            message=reason.message if reason else None,
        )
    runtime.bus.publish(request_channel(request_id))
    return request


def withdraw(runtime: ChatParts, request_id: str, reason: errors.HordeError) -> bool | None:
    """Cancel the request if it still waits for a worker (a batch's wind-down), recording `reason`: True when
    withdrawn, False when a worker runs it or it ended, None when there is no such request. Under the request's row
    lock, so that a claim either took it first (it goes on, charged as any) or finds it cancelled."""
    with runtime.db.transaction() as session:
        if session.get(ChatRequest, request_id) is None:
            return None
        request = lifecycle.lock_request(session, request_id)
        if request.state != WAITING:
            return False
        lifecycle.cancel(session, runtime.settings, request, rc=reason.rc, message=reason.message)
    runtime.bus.publish(request_channel(request_id))
    return True


def sweep(runtime: ChatParts) -> int:
    """Expire stale jobs, drop the model rows of ended requests and roll the requests served up by minute
    (horde/stats); the serve loop calls it every HORDE_SWEEP_INTERVAL_S."""
    with runtime.db.transaction() as session:
        changed = lifecycle.expire_jobs(session, runtime.settings)
    with runtime.db.autocommit() as session:
        model_rows.forget_ended(session)
    for request in changed:
        runtime.bus.publish(request_channel(request.id))
        if request.state == WAITING:
            announce_jobs(runtime.bus, request.models)
    rollup.roll_up_when_due(runtime.db, stats.SERVED, utcnow())  # after the wake-ups: its failure loses none
    return len(changed)


def pool(session: Session, settings: Settings, request: ChatRequest, snapshots: Snapshots | None = None) -> dict:
    """Online workers and threads for the request's models, and the wait ahead of it.

    With `snapshots` (a waiter's path) the answer may be up to a second old.
    """
    if snapshots is not None:
        wanted = set(request.models)
        online = [w for w in snapshots.online(session, settings.worker_online_window_s)[0] if wanted & set(w.models)]
        ahead = snapshots.position(session, request)
        job_s = snapshots.typical_job_s(session, settings.default_job_duration_s)
    else:
        online = workers.online_workers(session, settings.worker_online_window_s, request.models)
        ahead = queue.position(session, request)
        job_s = queue.typical_job_s(session, settings.default_job_duration_s)
    threads = sum(worker.threads for worker in online)
    wait = queue.wait_estimate_s(ahead, threads, job_s)
    return {
        "workers": len(online),
        "threads": threads,
        "queue_position": ahead,
        "wait_time": wait if request.state == WAITING else 0,
    }


def status_view(session: Session, settings: Settings, request: ChatRequest) -> dict:
    view = {
        "id": request.id,
        "state": request.state,
        "model": request.served_model,
        "models": request.models,
        "worker_id": request.worker_id,
        "worker_name": request.worker_name,
        "kudos": request.kudos_charged if request.kudos_charged else request.kudos_estimate,
        "kudos_estimate": request.kudos_estimate,
        "kudos_charged": request.kudos_charged,
        "context_adjustments": request.context_adjustments,
        "attempts": request.attempts,
        "reply": request.reply,
        "progress": None,
        "faulted": None,
        "queue_position": 0,
        "wait_time": 0,
    }
    if request.state in (WAITING, PROCESSING):
        current = pool(session, settings, request)
        view["queue_position"], view["wait_time"] = current["queue_position"], current["wait_time"]
    if request.state == PROCESSING and (request.progress_content or request.progress_reasoning):
        view["progress"] = {
            "content": request.progress_content or "",
            "reasoning_content": request.progress_reasoning or "",
        }
    if request.fault_rc and request.state != DONE:
        view["faulted"] = {"rc": request.fault_rc, "message": request.fault_message}
    return view
