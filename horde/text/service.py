"""Text operations shared by the native routes and the OpenAI front: create, status, cancel, pop, submit, sweep."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlalchemy import select

from horde import errors
from horde.accounts import service as accounts
from horde.accounts.models import User
from horde.chat import lifecycle as chat_lifecycle
from horde.chat.schemas import load
from horde.events import request_channel
from horde.text import admission, checkin, eligibility, fail_fast, lifecycle, views, webhook
from horde.text.models import TextRequest
from horde.text.schemas import POP_SCHEMA, SUBMIT_SCHEMA

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

    from horde.runtime import Runtime


#: The AI Horde's lifetime of a request no worker takes.
REQUEST_LIFETIME_S = 20 * 60


def create(
    runtime: Runtime,
    user: User,
    body: object,
    *,
    client_agent: str = "unknown:0:unknown",
    body_hash: str | None = None,
    holders: int = 0,
    front: fail_fast.FrontOptions | None = None,
) -> admission.Admitted:
    """Admit a text request. With `front` (the OpenAI front), gaps are refused before queueing."""
    loaded, warnings = admission.validate(body)
    if loaded.get("webhook"):
        webhook.check(loaded["webhook"], runtime.settings)
    with runtime.db.transaction() as session:
        user = session.get(User, user.id) or user
        if front is not None:
            loaded.setdefault("models", [])
            fail_fast.check(session, runtime.settings, loaded, front)
        admitted = admission.admit(
            session,
            runtime.settings,
            user,
            loaded,
            client_agent=client_agent,
            warnings=warnings,
            lifetime_s=REQUEST_LIFETIME_S,
        )
        if admitted.request is not None:
            admitted.request.body_hash, admitted.request.holders = body_hash, holders
    return admitted


def load_owned(session: Session, user: User, request_id: str) -> TextRequest:
    request = session.get(TextRequest, request_id)
    if request is None or request.user_id != user.id:
        raise errors.RequestNotFound(f"No text request '{request_id}' of this API key.")
    return request


def read(runtime: Runtime, request_id: str) -> TextRequest | None:
    with runtime.db.read() as session:
        return session.get(TextRequest, request_id)


def status(runtime: Runtime, request_id: str) -> dict:
    """Anyone holding the id may read its status, as on the AI Horde."""
    with runtime.db.read() as session:
        request = session.get(TextRequest, request_id)
        if request is None:
            raise errors.RequestNotFound(f"No text request '{request_id}'.")
        return views.status(session, runtime.settings, request)


def cancel(
    runtime: Runtime, request_id: str, *, running: bool = False, reason: errors.HordeError | None = None
) -> TextRequest:
    """Hand out no more generations (with `running`, end those being generated too); `reason` is the
    Horde's own, recorded so that the waiter and a replay answer the same."""
    with runtime.db.transaction() as session:
        request = session.get(TextRequest, request_id)
        if request is None:
            raise errors.RequestNotFound(f"No text request '{request_id}'.")
        if lifecycle.cancel(session, request, running=running) and reason is not None:
            request.fault_rc, request.fault_message = reason.rc, reason.message
    runtime.bus.publish(request_channel(request_id))
    return request


def pop(runtime: Runtime, api_key: str | None, body: object) -> dict:
    """Check in and take up to `amount` generations of the best request, within the worker's free threads."""
    pop_body = load(POP_SCHEMA, body)
    pop_body = {key: value for key, value in pop_body.items() if value is not None}
    for key, default in (("threads", 1), ("max_length", 512), ("max_context_length", 2048), ("amount", 1)):
        pop_body.setdefault(key, default)
    settings = runtime.settings
    with runtime.db.transaction() as session:
        owner = accounts.authenticate(session, api_key)
        worker = checkin.check_in(session, owner, pop_body)
        offer = eligibility.Offer(worker=worker, trusted=bool(owner.trusted), slow=checkin.is_slow(session, worker.id))
        free = (
            worker.threads - lifecycle.jobs_in_flight(session, worker) - chat_lifecycle.jobs_in_flight(session, worker)
        )
        request = None
        if free > 0:
            request = lifecycle.next_request(
                session,
                offer,
                skip_locked=runtime.db.is_postgresql,
                prefer_users=_user_ids(session, pop_body.get("priority_usernames")),
            )
        if request is None:
            skipped = eligibility.skipped_counts(session, offer) if free > 0 else {}
            return {
                "id": None,
                "ids": [],
                "payload": {},
                "skipped": skipped,
                "softprompt": None,
                "model": None,
                "ttl": None,
                "extra_source_images": None,
            }
        amount = 1 if request.disable_batching else min(pop_body["amount"], free)
        jobs = lifecycle.claim(session, settings, request, worker, amount)
        answer = {
            "id": jobs[0].id,
            "ids": [job.id for job in jobs],
            "payload": views.job_payload(request, len(jobs)),
            "skipped": {},
            "softprompt": request.softprompt,
            "model": jobs[0].model,
            "ttl": int(settings.job_ttl_s),
            "extra_source_images": None,
        }
    runtime.bus.publish(request_channel(request.id))
    return answer


def _user_ids(session, names) -> list[int]:
    """priority_usernames are the AI Horde's "name#id" (or a bare name)."""
    ids = []
    for name in names or ():
        _, _, tail = name.rpartition("#")
        if tail.isdigit():
            ids.append(int(tail))
        else:
            found = session.scalar(select(User.id).where(User.username == name))
            if found is not None:
                ids.append(found)
    return ids


def submit(runtime: Runtime, api_key: str | None, body: object) -> dict:
    submitted = load(SUBMIT_SCHEMA, body)
    with runtime.db.transaction() as session:
        owner = accounts.authenticate(session, api_key)
        if owner.anonymous:
            raise errors.AnonForbiddenWorker("The anonymous user cannot run workers.")
        reward, job, request = lifecycle.submit(session, runtime.settings, owner, submitted)
        delivery = None
        if reward and request.webhook:
            delivery = dict(views.generation(job), request=request.id, kudos=job.kudos)
        hook = request.webhook
    runtime.bus.publish(request_channel(request.id))
    if delivery is not None and hook:
        webhook.send(hook, delivery, runtime.settings)
    return {"reward": reward}


def sweep(runtime: Runtime) -> int:
    """Expire stale text jobs and requests; the serve loop calls it beside chat's sweep."""
    with runtime.db.transaction() as session:
        changed = lifecycle.expire_jobs(session, runtime.settings)
        changed += lifecycle.expire_requests(session, REQUEST_LIFETIME_S)
    for request_id in dict.fromkeys(changed):
        runtime.bus.publish(request_channel(request_id))
    return len(changed)
