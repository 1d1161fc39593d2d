"""The pop service: check in, expire stale jobs, claim the best job, or long-poll for one."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from sqlalchemy import case, func, literal, select
from sqlalchemy.orm import Session

from horde.accounts import service as accounts
from horde.chat import lifecycle
from horde.chat.eligibility import queue_filter
from horde.chat.models import WAITING, ChatRequest, ChatRequestModel
from horde.chat.schemas import POP_SCHEMA, load
from horde.events import announce_jobs, jobs_channel, request_channel
from horde.workers import service as workers
from horde.workers.declarations import ALL_FEATURES_MASK, ALL_GUARANTEES_MASK
from horde.workers.models import Worker

if TYPE_CHECKING:
    from horde.runtime import Runtime

LONG_POLL_RECHECK_S = 5.0


def pop(runtime: Runtime, api_key: str | None, body: Any) -> dict:
    request = load(POP_SCHEMA, body)
    deadline = time.monotonic() + request["wait"]
    with runtime.bus.subscribe(*[jobs_channel(model) for model in request["models"]]) as subscription:
        while True:
            last_try = deadline - time.monotonic() <= 0
            result = pop_once(runtime, api_key, request, explain=last_try)
            if result["id"] is not None or last_try:
                return result
            subscription.wait(max(0.0, min(deadline - time.monotonic(), LONG_POLL_RECHECK_S)))


def pop_once(runtime: Runtime, api_key: str | None, request: dict, *, explain: bool = True) -> dict:
    """One check-in and claim. `explain` computes the skipped counts of an empty pop, which scan
    the queue; a long-poll asks for them only on its last try."""
    settings = runtime.settings
    with runtime.db.transaction() as session:
        owner = accounts.authenticate(session, api_key)
        expired = lifecycle.expire_jobs(session, settings)
        worker = workers.check_in(session, owner, request)
        trusted = bool(owner.trusted)
        in_flight = lifecycle.jobs_in_flight(session, worker)
        result: dict[str, object]
        if in_flight >= worker.threads:
            result = {"id": None, "skipped": {"threads": in_flight}}
        else:
            claimed = lifecycle.claim(session, settings, worker, trusted, skip_locked=runtime.db.is_postgresql)
            if claimed is None:
                result = {"id": None, "skipped": skipped_counts(session, worker, trusted) if explain else {}}
            else:
                job, chat_request = claimed
                result = {"id": job.id, "model": job.model, "ttl": int(settings.job_ttl_s),
                          "payload": lifecycle.worker_payload(chat_request, worker)}
                expired.append(chat_request)
    for changed in expired:
        runtime.bus.publish(request_channel(changed.id))
        if changed.state == WAITING:
            announce_jobs(runtime.bus, changed.models)
    return result


def skipped_counts(session: Session, worker: Worker, trusted: bool) -> dict:
    """Why the waiting requests were not given to this worker, by first failing reason."""
    serves = select(literal(1)).where(ChatRequestModel.request_id == ChatRequest.id,
                                      ChatRequestModel.model.in_(worker.models)).exists()
    missing_features = ALL_FEATURES_MASK & ~worker.features_mask
    missing_guarantees = ALL_GUARANTEES_MASK & ~worker.guarantees_mask
    reasons = [
        ("models", ~serves),
        ("max_length", ChatRequest.max_tokens > worker.max_length),
        ("max_context_length", ChatRequest.context_tokens > worker.max_context_length),
        ("features", ChatRequest.required_features.op("&")(missing_features) != 0),
        ("guarantees", ChatRequest.required_guarantees.op("&")(missing_guarantees) != 0),
        ("worker_id", ChatRequest.only_workers.is_not(None) & ~ChatRequest.only_workers.like(f"%|{worker.id}|%")),
        ("untrusted", ChatRequest.trusted_only.is_(True) & literal(not trusted)),
    ]
    if worker.max_temperature_with_tools is not None:
        reasons.append(("limits", ChatRequest.tools_temperature > worker.max_temperature_with_tools))
    first_reason = case(*[(condition, name) for name, condition in reasons], else_="other")
    rows = session.execute(select(first_reason, func.count()).where(ChatRequest.state == WAITING,
                                                                    ~queue_filter(worker, trusted))
                           .group_by(first_reason)).all()
    return {reason: count for reason, count in rows if count}

