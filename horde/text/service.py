"""Text operations shared by the native routes and the OpenAI front: create, status, cancel, pop, submit, sweep."""

from __future__ import annotations

from typing import TYPE_CHECKING

from horde import errors
from horde.accounts.models import User
from horde.authz.check import authorize
from horde.authz.rules import Action
from horde.chat import tiers
from horde.events.bus import request_channel
from horde.http.payload import load
from horde.oversight import gate
from horde.stats import rollup
from horde.text import admission, fail_fast, lifecycle, model_rows, pop, roster, stats, views, webhook
from horde.text.models import WAITING, TextJob, TextRequest
from horde.text.schemas import SUBMIT_SCHEMA
from horde.timeutil import utcnow
from horde.workers.service import worker_owner

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

    from horde.accounts.identity import Identity
    from horde.text.parts import TextParts


#: The AI Horde's lifetime of a request no worker takes.
REQUEST_LIFETIME_S = 20 * 60


def create(
    runtime: TextParts,
    user: User | Identity,
    body: object,
    *,
    client_agent: str = "unknown:0:unknown",
    body_hash: str | None = None,
    holders: int = 0,
    front: fail_fast.FrontOptions | None = None,
    client_address: str | None = None,
    tier: tiers.Tier = tiers.INTERACTIVE,
    request_id: str | None = None,
) -> admission.Admitted:
    """Admit a text request. With `front` (the OpenAI front), gaps are refused before queueing. `tier`: interactive,
    or a batch line's (horde/chat/tiers.py); `request_id`: the new request's id, when the caller chose it."""
    authorize(user, Action.GENERATE)
    gate.admit_generation(runtime.oversight.current(), user, runtime.settings.raid_new_account_s)
    loaded, warnings = admission.validate(body)
    if loaded.get("webhook"):
        webhook.check(loaded["webhook"], runtime.settings)
    settings, snapshots = runtime.settings, runtime.snapshots
    with runtime.db.transaction() as session:
        models = list(dict.fromkeys(loaded.get("models") or []))
        queued = roster.waiting_count(snapshots, session, models)
        window_s = settings.worker_online_window_s
        workers = roster.cached(snapshots, session, runtime.text_checkins.generation, window_s)
        if front is not None:
            loaded.setdefault("models", [])
            queue_view = fail_fast.QueueView(
                queued, roster.typical_job_s(snapshots, session, settings.default_job_duration_s)
            )
            try:
                online = fail_fast.check(session, settings, loaded, front, workers, queue_view)
            except errors.HordeError:  # a worker may have checked in on another process within the second
                workers = roster.read(session, window_s)
                online = fail_fast.check(session, settings, loaded, front, workers, queue_view)
        else:
            online = roster.online_among(workers, window_s, models)
        admitted = admission.admit(
            session,
            settings,
            user,
            loaded,
            client_agent=client_agent,
            client_address=client_address,
            warnings=warnings,
            lifetime_s=REQUEST_LIFETIME_S,
            online=online,
            queued=queued,
            body_hash=body_hash,
            holders=holders,
            tier=tier,
            request_id=request_id,
        )
        if front is None and admitted.request is not None:  # the native API's warning; the front refused gaps
            admitted.message = _no_worker_message(session, settings, admitted.request, online, loaded)
    if admitted.request is not None:
        snapshots.text_queue_changed()
        pop.announce(runtime, admitted.request.models)
    return admitted


def _no_worker_message(session: Session, settings, request: TextRequest, online: list, loaded: dict) -> str | None:
    """The native answer's warning, decided on the workers as they are now when the per-process view has none."""
    if admission.no_worker_message(request, online, loaded, REQUEST_LIFETIME_S) is None:
        return None
    fresh = roster.online_now(session, settings.worker_online_window_s, request.models)
    return admission.no_worker_message(request, fresh, loaded, REQUEST_LIFETIME_S)


def load_owned(session: Session, user: User, request_id: str) -> TextRequest:
    request = session.get(TextRequest, request_id)
    if request is None or request.user_id != user.id:
        raise errors.RequestNotFound(f"No text request '{request_id}' of this API key.")
    return request


def read(runtime: TextParts, request_id: str) -> TextRequest | None:
    with runtime.db.read() as session:
        return session.get(TextRequest, request_id)


def status(runtime: TextParts, request_id: str) -> dict:
    """Anyone holding the id may read its status, as on the AI Horde."""
    with runtime.db.read() as session:
        request = session.get(TextRequest, request_id)
        if request is None:
            raise errors.RequestNotFound(f"No text request '{request_id}'.")
        return views.status(session, runtime.settings, request)


def cancel(
    runtime: TextParts, request_id: str, *, running: bool = False, reason: errors.HordeError | None = None
) -> TextRequest:
    """Hand out no more generations (with `running`, end those being generated too); `reason` is the
    Horde's own, recorded so that the waiter and a replay answer the same."""
    with runtime.db.transaction() as session:
        request = lifecycle.lock_request(session, request_id)
        if request is None:
            raise errors.RequestNotFound(f"No text request '{request_id}'.")
        if lifecycle.cancel(session, request, running=running) and reason is not None:
            request.fault_rc, request.fault_message = reason.rc, reason.message
    runtime.bus.publish(request_channel(request_id))
    return request


def withdraw(runtime: TextParts, request_id: str, reason: errors.HordeError) -> bool | None:
    """Cancel the request if none of its generations was handed out yet (a batch's wind-down): True when withdrawn,
    False when it runs or ended, None when there is no such request. One being generated goes on, charged as any."""
    with runtime.db.transaction() as session:
        request = lifecycle.lock_request(session, request_id)
        if request is None:
            return None
        if request.state != WAITING or request.processing:
            return False
        lifecycle.cancel(session, request, running=False)
        request.fault_rc, request.fault_message = reason.rc, reason.message
    runtime.bus.publish(request_channel(request_id))
    return True


def submit(runtime: TextParts, api_key: str | None, body: object) -> dict:
    submitted = load(SUBMIT_SCHEMA, body)
    owner = worker_owner(runtime, api_key)  # the process's identity cache, as on the pop
    with runtime.db.transaction() as session:
        reward, job_id, request = lifecycle.submit(session, runtime.settings, owner, submitted)
        delivery = None
        if reward and request.webhook:
            job = session.get_one(TextJob, job_id)
            delivery = dict(views.generation(job), request=request.id, kudos=job.kudos)
        hook = request.webhook
    runtime.bus.publish(request_channel(request.id))
    if request.state == WAITING:  # a faulted generation waits again
        pop.announce(runtime, request.models)
    if delivery is not None and hook:
        webhook.send(hook, delivery, runtime.settings)
    return {"reward": reward}


def sweep(runtime: TextParts) -> int:
    """Expire stale text jobs and requests, drop the model rows of ended requests that a pop held as they ended, and
    roll the generations served up by minute (horde/stats); the serve loop calls it beside chat's sweep."""
    with runtime.db.transaction() as session:
        changed = lifecycle.expire_jobs(session, runtime.settings)
        changed += lifecycle.expire_requests(session, REQUEST_LIFETIME_S)
    with runtime.db.autocommit() as session:
        model_rows.forget_ended(session)
    for request_id in dict.fromkeys(changed):
        runtime.bus.publish(request_channel(request_id))
        request = read(runtime, request_id)
        if request is not None and request.state == WAITING:
            pop.announce(runtime, request.models)
    rollup.roll_up_when_due(runtime.db, stats.SERVED, utcnow())  # after the wake-ups: its failure loses none
    return len(changed)
