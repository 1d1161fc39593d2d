"""A text pop: check in, then take up to `amount` generations of the best request within the
worker's free threads, or long-poll for one up to `wait` seconds.

`wait` is this Horde's addition to the AI Horde's pop (which has none, so its workers
sleep a second between empty pops): a worker that sends it hears of a new job at once.
A new or restarted generation is announced on `text_jobs_channel` of each of its models
(ANY_MODEL_CHANNEL for a request that takes any model).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from sqlalchemy import bindparam, func, select
from sqlalchemy.orm import Session

from horde.accounts import names
from horde.accounts.identity import Identity
from horde.accounts.models import User
from horde.events.bus import request_channel
from horde.http.client_connection import requester_gone
from horde.http.payload import RepeatedBodies
from horde.http.request_context import caller_address
from horde.queueing.model_rows import of_its_request
from horde.storage import precompiled
from horde.storage.database import table_of
from horde.text import checkin, eligibility, take, views
from horde.text.models import ANY_MODEL, WAITING, TextRequest, TextRequestModel
from horde.text.schemas import POP_SCHEMA
from horde.text.threads import busy_threads
from horde.workers import duty
from horde.workers.service import worker_owner

if TYPE_CHECKING:
    from horde.text.parts import TextParts

POP_DEFAULTS = (("threads", 1), ("max_length", 512), ("max_context_length", 2048), ("amount", 1), ("wait", 0))
LONG_POLL_RECHECK_S = 5.0
ANY_MODEL_CHANNEL = "text-jobs:*"
#: A worker sends the same pop body every time: loaded once.
POP_BODIES = RepeatedBodies(POP_SCHEMA)
_TEXT_REQUESTS, _MODEL_ROWS = table_of(TextRequest), table_of(TextRequestModel)
#: Whether a text request of the poller's models (or of any model) waits: a woken poller that found none it may
#: take then wakes another. By the model rows: a backlog of other models keeps no announcement going round.
_ANY_WAITING = (
    select(_MODEL_ROWS.c.request_id)
    .where(
        _MODEL_ROWS.c.model.in_(bindparam("queue_models", expanding=True)),
        of_its_request(_TEXT_REQUESTS, _MODEL_ROWS, _TEXT_REQUESTS.c.waiting, _TEXT_REQUESTS.c.state == WAITING) > 0,
    )
    .limit(1)
)
#: Every waiting text request: the `models` share of an empty pop's skipped counts is this less those of its models.
_WAITING_TOTAL = select(func.count()).where(_TEXT_REQUESTS.c.state == WAITING)


def text_jobs_channel(model: str) -> str:
    return f"text-jobs:{model}"


def announce(runtime: TextParts, models: list[str]) -> None:
    """Wake the text workers long-polling for these models (every text worker, for any model)."""
    for channel in [text_jobs_channel(model) for model in models] or [ANY_MODEL_CHANNEL]:
        runtime.bus.publish(channel)


def empty_answer(skipped: dict) -> dict:
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


def pop(runtime: TextParts, api_key: str | None, raw_body: bytes) -> dict:
    """Check in and claim, long-polling up to `wait` s. An announced job wakes one poller; one that finds
    nothing it may take while text requests wait passes the announcement on, as on chat's pop."""
    pop_body = {key: value for key, value in POP_BODIES.load(raw_body).items() if value is not None}
    for key, default in POP_DEFAULTS:
        pop_body.setdefault(key, default)
    owner = worker_owner(runtime, api_key)
    deadline = time.monotonic() + pop_body["wait"]
    channels = [text_jobs_channel(model) for model in pop_body["models"]] + [ANY_MODEL_CHANNEL]
    woken = False
    with runtime.bus.subscribe(*channels, single=True) as subscription:
        while True:
            last_try = deadline - time.monotonic() <= 0
            subscription.mark_seen()
            answer = pop_once(runtime, owner, pop_body, explain=last_try)
            if answer["id"] is not None or last_try or answer.get("busy"):
                answer.pop("busy", None)
                return answer
            if woken and _any_waiting(runtime, pop_body["models"]):
                subscription.pass_on()
            woken = subscription.wait(max(0.0, min(deadline - time.monotonic(), LONG_POLL_RECHECK_S)))
            if requester_gone():  # nobody would run what it claims: the announcement goes to another
                if woken:
                    subscription.pass_on()
                return empty_answer({})


def pop_once(runtime: TextParts, owner: Identity, pop_body: dict, *, explain: bool) -> dict:
    """One check-in and claim. `explain` computes the skipped counts, which scan the queue. A check-in
    that would change nothing is not written (horde/workers/checkins.py)."""
    remembered = runtime.text_checkins.current(owner.id, pop_body, runtime.settings.worker_online_window_s)
    started = time.monotonic()
    with runtime.db.transaction() as session:
        worker = remembered or checkin.TextWorkerView.of(checkin.check_in(session, owner, pop_body, caller_address()))
        answer, request_id = _claim_or_explain(runtime, session, owner, worker, pop_body, explain=explain)
    if remembered is None:
        runtime.text_checkins.remember(pop_body, worker, started)
    refusal = answer.pop("maintenance", None)
    if refusal is not None:  # after the commit: the check-in stands
        raise refusal
    if request_id is not None:
        runtime.snapshots.text_queue_changed()
        runtime.bus.publish(request_channel(request_id))
    return answer


def _claim_or_explain(
    runtime: TextParts, session: Session, owner: Identity, worker: checkin.TextWorkerView, pop_body: dict, *, explain
) -> tuple[dict, str | None]:
    """The pop's answer and the request it claimed generations of, if any, in the pop's transaction."""
    busy = busy_threads(session, worker.id)
    if duty.is_off_duty(busy):
        return dict(empty_answer({}), busy=True, maintenance=duty.refusal(session, worker.id)), None
    free = worker.threads - busy
    if free <= 0:
        return dict(empty_answer({}), busy=True), None
    # A worker's speed (the median of its latest generations) moves slowly: read up to a second old, not on
    # every pop.
    slow = runtime.snapshots.cached(("text-slow", worker.id), lambda: checkin.is_slow(session, worker.id))
    offer = eligibility.Offer(worker=worker, trusted=bool(owner.trusted), slow=slow)
    prefer = _user_ids(session, pop_body.get("priority_usernames"))
    request = take.next_request(session, offer, skip_locked=runtime.db.is_postgresql, prefer_users=prefer)
    if request is None:
        return empty_answer(_skipped(runtime, session, offer) if explain else {}), None
    amount = 1 if request.disable_batching else min(pop_body["amount"], free)
    claimed = take.claim(session, runtime.settings, request, worker, amount)
    if not claimed.job_ids:
        return empty_answer({}), None
    answer = {
        "id": claimed.job_ids[0],
        "ids": claimed.job_ids,
        "payload": views.job_payload(request, len(claimed.job_ids)),
        "skipped": {},
        "softprompt": request.softprompt,
        "model": claimed.model,
        "ttl": int(runtime.settings.job_ttl_s),
        "extra_source_images": None,
    }
    return answer, request.id


def _any_waiting(runtime: TextParts, models: list[str]) -> bool:
    with runtime.db.read() as session:
        params = {"queue_models": [*models, ANY_MODEL]}
        return precompiled.execute(session.connection(), _ANY_WAITING, params).scalar() is not None


def _skipped(runtime: TextParts, session: Session, offer: eligibility.Offer) -> dict[str, int]:
    """An empty pop's skipped counts, taken at most once a second per process and offer, and again after this
    process's own admissions and claims (runtime.snapshots): an idle worker pops several times a second, and its
    answer is the same. The count of every waiting request, which reads the whole queue, is shared by all offers."""
    snapshots = runtime.snapshots

    def counts() -> dict[str, int]:
        total = snapshots.text_queue_view(
            "waiting", lambda: precompiled.execute(session.connection(), _WAITING_TOTAL).scalar() or 0
        )
        return eligibility.skipped_counts(session, offer, total)

    return dict(snapshots.text_queue_view(("skipped", eligibility.offer_key(offer)), counts))


def _user_ids(session: Session, usernames: list[str] | None) -> list[int]:
    """priority_usernames are the AI Horde's "name#id" (or a bare name). An id no user can have (past the users'
    key, or digits that are not ASCII) is looked up as a name instead, never sent to the database as an id."""
    ids = []
    for name in usernames or ():
        public = names.id_in_alias(name)
        if public is not None:
            ids.append(public)
        else:
            found = session.scalar(select(User.id).where(User.username == name))
            if found is not None:
                ids.append(found)
    return ids
