"""A worker's submit or fault with the pop it may carry (decisions 0011 and 0013).

When the carried pop's check-in is remembered (nothing to write for it), its first claim attempt runs in
the call's own transaction (a submit's before its settlement, a fault's after its restart): one BEGIN and
COMMIT for both. An error in that attempt rolls the transaction back and the call runs again alone, then
pops after its commit as without the fold: the claim can never undo or fail the call. Events go out after
the commit.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session

from horde import errors
from horde.accounts.identity import Identity
from horde.chat import lifecycle
from horde.chat.claim import Claimed
from horde.chat.models import WAITING
from horde.dispatch import pop as pop_service
from horde.events.bus import announce_jobs, progress_channel, request_channel
from horde.events.drain import DRAIN
from horde.observability.metrics import count_prompt, long_poll
from horde.observability.record import note
from horde.storage.database import is_unavailable
from horde.workers.checkins import WorkerView

if TYPE_CHECKING:
    from horde.runtime import Runtime

log = logging.getLogger(__name__)
Outcome = TypeVar("Outcome")


class _FoldedClaimFailed(Exception):
    """The first claim attempt inside the call's transaction failed (the cause): nothing is committed."""


class _Fold:
    """The carried pop's first claim attempt, made by the call inside its own transaction once accepted."""

    def __init__(self, runtime: Runtime, owner: Identity, worker: WorkerView, *, explain: bool):
        self.runtime, self.owner, self.worker, self.explain = runtime, owner, worker, explain
        self.attempted = False
        self.first: tuple[dict, Claimed | None] | None = None

    def claim(self, session: Session, *, ending_jobs: int = 0) -> None:
        """Its statements wait for no lock (the claim skips locked rows), so the call's lock order is kept."""
        self.attempted = True
        try:
            answer, claimed, _ = pop_service.claim_or_explain(
                self.runtime, session, self.worker, self.owner.trusted, explain=self.explain, ending_jobs=ending_jobs
            )
            self.first = answer, claimed
        except Exception as exc:
            if isinstance(exc, SQLAlchemyError) and is_unavailable(exc):
                raise  # the transaction answers it (503, nothing committed); _call_then_claim runs the call again
            raise _FoldedClaimFailed() from exc

    def claim_before_settling(self, session: Session) -> Callable[[Any], None]:
        """For lifecycle.submit: the claim once the reply is accepted, before the kudos move, when the
        submitted job (of the locked request row) still counts among its worker's running jobs."""
        return lambda request: self.claim(session, ending_jobs=int(request.job_worker_id == self.worker.id))


def submit(runtime: Runtime, owner: Identity, body: dict) -> dict:
    """Submit the reply; with `pop`, also answer the next job in `next`.

    On PostgreSQL a conforming reply is accepted by one statement in autocommit (lifecycle.accept_alone), so
    the balances it moves stay locked only while the database runs it, after reading the job and its request
    unless this process claimed the job (horde/chat/claimed_jobs.py); its carried pop runs after it, as a
    pop of its own. Elsewhere, and for the refusals, the submit is a transaction that may fold the pop in."""
    if runtime.db.is_postgresql:
        claimed_here = runtime.claimed_jobs.take(body["id"], owner.id)  # else read: one round trip more
        with runtime.db.autocommit() as session:
            request = claimed_here or lifecycle.read_for_submit(session, owner, body["id"])
            accepted = lifecycle.accept_alone(session, runtime.settings, request, body)
        if accepted is not None:
            settled, finished = accepted
            _announce(runtime, finished, None)
            return _with_next_job(runtime, owner, body, {"reward": settled}, None)

    def call(session: Session, fold: _Fold | None) -> tuple[int | None, str | None, lifecycle.Changed]:
        before_settling = None if fold is None else fold.claim_before_settling(session)
        return lifecycle.submit(session, runtime.settings, owner, body, before_settling=before_settling)

    (reward, problem, request), first = _call_then_claim(runtime, owner, body, call)
    _announce(runtime, request, first)
    if problem:
        raise errors.ChatSubmitNonconformant(problem)
    return _with_next_job(runtime, owner, body, {"reward": reward}, first)


def fault(runtime: Runtime, owner: Identity, body: dict) -> dict:
    """Report the job as failed; with `pop`, also answer the next job in `next` (it may be this request again)."""

    def call(session: Session, fold: _Fold | None) -> lifecycle.Changed:
        changed = lifecycle.fault(session, runtime.settings, owner, body)
        if fold is not None:  # after the restart, so the worker may take the request back
            fold.claim(session)
        return changed

    request, first = _call_then_claim(runtime, owner, body, call)
    _announce(runtime, request, first)
    return _with_next_job(runtime, owner, body, {"message": "OK"}, first)


def _call_then_claim(
    runtime: Runtime, owner: Identity, body: dict, call: Callable[[Session, _Fold | None], Outcome]
) -> tuple[Outcome, tuple[dict, Claimed | None] | None]:
    """The call's outcome, and the pop's first answer with its claim when it was folded into the call's
    transaction (None when it was not: no pop, a check-in to write, a refused call, a failed attempt)."""
    next_pop = body.get("pop")
    worker = None if next_pop is None else pop_service.remembered_worker(runtime, owner, next_pop)
    if next_pop is None or worker is None:
        with runtime.db.transaction() as session:
            return call(session, None), None
    fold = _Fold(runtime, owner, worker, explain=next_pop["wait"] == 0)
    try:
        with runtime.db.transaction() as session:
            outcome = call(session, fold)
        return outcome, fold.first
    except _FoldedClaimFailed as failed:
        log.warning("a claim inside a worker's call failed; the call runs again alone", exc_info=failed.__cause__)
    except errors.ServiceUnavailable as lost:
        if not fold.attempted or lost.maybe_committed:
            raise
        log.warning("the connection was lost in a worker's call with a claim; the call runs again alone")
    with runtime.db.transaction() as session:  # nothing was stored: the call alone, as without the fold
        return call(session, None), None


def _announce(runtime: Runtime, request: lifecycle.Changed, first: tuple[dict, Claimed | None] | None) -> None:
    claimed = None if first is None else first[1]
    runtime.bus.publish(request_channel(request.id), request.finish)
    if request.finish is not None:
        count_prompt("chat", request.finish.reply.get("usage") or {})
    if claimed is not None:
        runtime.snapshots.queue_changed()
        runtime.bus.publish(progress_channel(claimed.request_id))
    if request.state == WAITING and (claimed is None or claimed.request_id != request.id):
        announce_jobs(runtime.bus, request.models)


def _with_next_job(
    runtime: Runtime, owner: Identity, body: dict, answer: dict, first: tuple[dict, Claimed | None] | None
) -> dict:
    """`answer`, plus `next` when the call carried a pop: the folded attempt's answer when it took a job
    (or the pop would not wait), else the pop run after the call committed and its events went out."""
    next_pop = body.get("pop")
    if next_pop is None:
        return answer
    note(worker=next_pop["name"])
    if first is not None and (first[0]["id"] is not None or next_pop["wait"] == 0 or DRAIN.ending):
        answer["next"] = first[0]
        return answer
    with long_poll():
        answer["next"] = pop_service.next_job(runtime, owner, next_pop)
    return answer
