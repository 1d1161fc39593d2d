"""A worker's owner (or a moderator) manages it: PUT /workers/{id} (maintenance, info, name, team; a moderator
alone: paused) and DELETE.

Who may change what is the authorization table's (horde/authz/rules.py): the owner's own key or a moderator, never
a shared key nor the anonymous user, with the AI Horde's return codes (NotOwner for maintenance and info,
NotModerator for a name, a team, a pause or a delete). Every change of one PUT is one compare-and-set UPDATE of a
worker that is still there, so a PUT and a DELETE fired at once never both win; a new name is unique, and so is
what it looks like (horde/workers/names.py), by the table's indexes, so two renames to one name, or to two names
that look alike, never both win either. A moderator's change or delete of another user's worker is recorded in
the audit trail in the same transaction.

A deleted worker's row stays (the jobs it ran name it, and the statistics count them): it is renamed at random
(its name is free for a new worker), offline to both pops' windows, and off duty (horde/workers/duty.py). Its
running jobs end as expired ones do, with no reward: their deadline is moved to now and the sweeps run.
"""

from __future__ import annotations

import datetime as dt
import uuid
from typing import TYPE_CHECKING

from sqlalchemy import update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from horde import errors
from horde.accounts.identity import Identity
from horde.authz.check import authorize
from horde.authz.rules import Action
from horde.chat import service as chat_service
from horde.chat.models import JOB_PROCESSING as CHAT_PROCESSING
from horde.chat.models import ChatJob
from horde.http.payload import load
from horde.oversight import trail
from horde.oversight.trail import Actor, Done, Target
from horde.registry.schemas import MODIFY_WORKER_SCHEMA
from horde.storage.database import table_of
from horde.text import service as text_service
from horde.text.checkin import NEVER_POPPED
from horde.text.models import JOB_PROCESSING as TEXT_PROCESSING
from horde.text.models import TextJob
from horde.timeutil import utcnow
from horde.workers import names
from horde.workers.models import MAX_INFO_CHARS, MAX_NAME_CHARS, Worker

if TYPE_CHECKING:
    from horde.runtime import Runtime

MIN_NAME_CHARS = 5
DELETED_NAME_PREFIX = "deleted-"
_WORKERS = table_of(Worker)
#: The columns a moderator's change is recorded with, before and after (the audit trail).
_AUDITED = ("maintenance", "maintenance_msg", "info", "name", "paused")


def live_worker(session: Session, worker_id: str) -> Worker:
    """The worker with that id, unless there is none or it was deleted: 404 WorkerNotFound."""
    worker = session.get(Worker, worker_id)
    if worker is None or worker.deleted_at is not None:
        raise errors.WorkerNotFound(f"Worker with ID '{worker_id}' not found.")
    return worker


def modify(runtime: Runtime, caller: Identity, worker_id: str, body: object) -> dict:
    """ModifyWorker: the fields this PUT changed, with their new values. A moderator's change of another user's
    worker is written to the audit trail with it."""
    with runtime.db.read() as session:
        worker = live_worker(session, worker_id)
        owner_id, name = worker.owner_id, worker.name
        before = {column: getattr(worker, column) for column in _AUDITED}
    wanted = load(MODIFY_WORKER_SCHEMA, body)
    reason = wanted.pop("reason", None)
    values, answer = _changes(
        caller, owner_id, name, {key: value for key, value in wanted.items() if value is not None}
    )
    if values:
        audited = {column: before[column] for column in values if column in _AUDITED}
        entry = None if caller.id == owner_id else (audited, {column: values[column] for column in audited}, reason)
        _update(runtime, caller, worker_id, owner_id, values, entry)
    return answer


def _changes(caller: Identity, owner_id: int, name: str, wanted: dict) -> tuple[dict, dict]:
    """The columns to write and the answer, checked in the AI Horde's order; nothing is written when one fails."""
    values: dict = {}
    answer: dict = {}
    if "maintenance" in wanted:
        authorize(caller, Action.SET_WORKER_MAINTENANCE, owner_id=owner_id)
        values["maintenance"] = answer["maintenance"] = wanted["maintenance"]
        values["maintenance_msg"] = (wanted.get("maintenance_msg") or None) if wanted["maintenance"] else None
    if "info" in wanted:
        authorize(caller, Action.SET_WORKER_INFO, owner_id=owner_id)
        if len(wanted["info"]) > MAX_INFO_CHARS:
            raise errors.TooLongWorkerName(f"The worker info is too long. Please stay below {MAX_INFO_CHARS}.")
        values["info"] = wanted["info"] or None
        answer["info"] = wanted["info"]
    if "paused" in wanted:
        authorize(caller, Action.PAUSE_WORKER, owner_id=owner_id)
        values["paused"] = answer["paused"] = wanted["paused"]
    if "name" in wanted:
        authorize(caller, Action.RENAME_WORKER, owner_id=owner_id)
        _check_name(wanted["name"])
        if wanted["name"] != name:
            values["name"], values["name_key"] = wanted["name"], names.name_key(wanted["name"])
        answer["name"] = wanted["name"]
    if "team" in wanted:
        authorize(caller, Action.SET_WORKER_TEAM, owner_id=owner_id)
        if wanted["team"] != "":
            raise errors.TeamNotFound(f"Team with ID '{wanted['team']}' not found.")
        answer["team"] = "None"  # the AI Horde's answer for a worker left without a team
    if not answer:
        raise errors.NoWorkerModSelected("No worker modification selected!")
    return values, answer


def _check_name(name: str) -> None:
    if len(name) > MAX_NAME_CHARS:
        raise errors.TooLongWorkerName(f"The worker name is too long. Please stay below {MAX_NAME_CHARS}.")
    if len(name) < MIN_NAME_CHARS:
        raise errors.BadRequest(f"A worker name needs at least {MIN_NAME_CHARS} characters.", param="name")


def _update(
    runtime: Runtime,
    caller: Identity,
    worker_id: str,
    owner_id: int,
    values: dict,
    entry: tuple[dict, dict, str | None] | None,
) -> None:
    """One compare-and-set UPDATE of the worker as long as it is not deleted, and the trail's `entry` (before,
    after, reason) of a moderator's change in the same transaction."""
    statement = (
        update(_WORKERS)
        .where(_WORKERS.c.id == worker_id, _WORKERS.c.owner_id == owner_id, _WORKERS.c.deleted_at.is_(None))
        .values(**values)
    )
    try:
        with runtime.db.transaction() as session:
            changed = session.execute(statement).rowcount  # type: ignore[attr-defined]
            if changed != 1:
                raise errors.WorkerNotFound(f"Worker with ID '{worker_id}' not found.")
            if entry is not None:
                before, after, reason = entry
                trail.record(
                    session, Actor.of(caller), Done.MODIFY_WORKER, Target.WORKER, worker_id,
                    before=before, after=after, reason=reason,
                )  # fmt: skip
    except IntegrityError:  # the name's or its key's unique index: another worker holds one (or took it meanwhile)
        raise errors.WorkerNameAlreadyExists(
            f"The specified worker name '{values['name']}' is already taken, or looks like a taken one!"
        ) from None


def delete(runtime: Runtime, caller: Identity, worker_id: str, reason: str | None = None) -> dict:
    """DeletedWorker: the worker's id and name. Its running jobs end as expired ones, before this answers. A
    moderator's delete of another user's worker is written to the audit trail with it."""
    with runtime.db.transaction() as session:
        worker = live_worker(session, worker_id)
        authorize(caller, Action.DELETE_WORKER, owner_id=worker.owner_id)
        name = worker.name
        retire(session, worker_id)
        if caller.id != worker.owner_id:
            trail.record(
                session, Actor.of(caller), Done.DELETE_WORKER, Target.WORKER, worker_id,
                before={"name": name, "owner_id": worker.owner_id}, reason=reason,
            )  # fmt: skip
    end_expired_jobs(runtime)
    return {"deleted_id": worker_id, "deleted_name": name}


def retire(session: Session, worker_id: str) -> None:
    """Delete the worker in the caller's transaction (the module's rule): renamed at random, without a name key,
    offline and off duty, its running jobs past their deadline. The caller runs `end_expired_jobs` after its
    commit. WorkerNotFound when it was deleted meanwhile."""
    now = utcnow()
    tombstone = (
        update(_WORKERS)
        .where(_WORKERS.c.id == worker_id, _WORKERS.c.deleted_at.is_(None))
        .values(
            deleted_at=now,
            name=f"{DELETED_NAME_PREFIX}{uuid.uuid4()}",
            name_key=None,
            last_pop_at=NEVER_POPPED,
            text_pop_at=None,
            maintenance=False,
            maintenance_msg=None,
        )
    )
    if session.execute(tombstone).rowcount != 1:  # type: ignore[attr-defined]
        raise errors.WorkerNotFound(f"Worker with ID '{worker_id}' not found.")
    end_running_jobs(session, [worker_id], now)


def end_running_jobs(session: Session, worker_ids: list[str], now: dt.datetime) -> None:
    """Move the deadline of the workers' running jobs to the past: the sweeps (end_expired_jobs, after the commit)
    expire them as any late job, with no reward, and their requests go back to the queue."""
    if not worker_ids:
        return
    past = now - dt.timedelta(seconds=1)
    for table, running in ((table_of(ChatJob), CHAT_PROCESSING), (table_of(TextJob), TEXT_PROCESSING)):
        session.execute(
            update(table).where(table.c.worker_id.in_(worker_ids), table.c.state == running).values(deadline_at=past)
        )


def end_expired_jobs(runtime: Runtime) -> None:
    """Run both sweeps now: the jobs whose deadline a retire or a flag moved to the past end before the answer."""
    chat_service.sweep(runtime)
    text_service.sweep(runtime)
