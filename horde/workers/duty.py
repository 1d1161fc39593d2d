"""Whether a worker takes jobs: not while its owner holds it in maintenance, nor once it is deleted, nor while a
moderator pauses it or flags its owner.

A pop's first look counts a worker off duty as having every thread busy (OFF_DUTY_THREADS), in the statement that
gates its claim: a PUT of maintenance or of a pause, a DELETE, or a flag that has committed stops every claim that
starts after it, in every process, whatever the process remembers of the worker's last check-in
(horde/workers/checkins.py).

What its pop is answered: in maintenance, the AI Horde's 403 WorkerMaintenance with its owner's message; its owner
flagged, 403 WorkerFlaggedMaintenance; paused or deleted, no job, as if none waited (a paused worker's owner is
not told, as on the AI Horde).
"""

from __future__ import annotations

from sqlalchemy import bindparam, case, func, or_, select
from sqlalchemy.orm import Session

from horde import errors
from horde.accounts.models import User
from horde.storage.database import table_of
from horde.workers.models import Worker

#: Far above any worker's threads (a pop declares at most 50): the busy count of a worker off duty.
OFF_DUTY_THREADS = 1_000_000
DEFAULT_MAINTENANCE_MESSAGE = "This worker has been put into maintenance mode by its owner"
FLAGGED_MESSAGE = (
    "Your user has been flagged by the moderators for suspicious activity: your workers take no jobs. "
    "Please contact the moderators."
)

# Aliases: the statements that gate a claim on OFF_DUTY may read the workers and users tables themselves, and a
# subquery over the plain tables would be correlated with theirs.
_WORKER, _OWNER = table_of(Worker).alias("duty_worker"), table_of(User).alias("duty_owner")
_OFF = or_(_WORKER.c.maintenance, _WORKER.c.deleted_at.is_not(None), _WORKER.c.paused, _OWNER.c.flagged)
_OFF_DUTY_ROW = (
    select(case((_OFF, OFF_DUTY_THREADS), else_=0))
    .select_from(_WORKER.join(_OWNER, _OWNER.c.id == _WORKER.c.owner_id))
    .where(_WORKER.c.id == bindparam("worker"))
    .scalar_subquery()
)
#: Threads a pop counts busy for being off duty (bind parameter `worker`): a worker row gone counts as deleted.
OFF_DUTY = func.coalesce(_OFF_DUTY_ROW, OFF_DUTY_THREADS)
#: The refusals a pop raises for its worker being off duty (a paused or deleted worker's is none).
REFUSALS = (errors.WorkerMaintenance, errors.WorkerFlaggedMaintenance)


def is_off_duty(busy: int) -> bool:
    """A busy count from a look that added OFF_DUTY (less the jobs a submit ends) says the worker is off duty."""
    return busy >= OFF_DUTY_THREADS // 2


def refusal(session: Session, worker_id: str) -> errors.HordeError | None:
    """What a pop of a worker off duty answers (the module's rule): None for a deleted worker, whose pop answers no
    job (its next check-in makes a new worker of that name), and for a paused one."""
    row = session.execute(
        select(
            _WORKER.c.maintenance, _WORKER.c.maintenance_msg, _WORKER.c.deleted_at, _WORKER.c.paused, _OWNER.c.flagged
        )
        .select_from(_WORKER.join(_OWNER, _OWNER.c.id == _WORKER.c.owner_id))
        .where(_WORKER.c.id == worker_id)
    ).first()
    if row is None or row.deleted_at is not None:
        return None
    if row.flagged:
        return errors.WorkerFlaggedMaintenance(FLAGGED_MESSAGE)
    if row.maintenance:
        return errors.WorkerMaintenance(row.maintenance_msg or DEFAULT_MAINTENANCE_MESSAGE)
    return None
