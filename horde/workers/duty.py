"""Whether a worker takes jobs: not while its owner holds it in maintenance, nor once it is deleted.

A pop's first look counts a worker off duty as having every thread busy (OFF_DUTY_THREADS), in the statement that
gates its claim: a PUT of maintenance or a DELETE that has committed stops every claim that starts after it, in
every process, whatever the process remembers of the worker's last check-in (horde/workers/checkins.py).
"""

from __future__ import annotations

from sqlalchemy import bindparam, case, func, or_, select
from sqlalchemy.orm import Session

from horde import errors
from horde.storage.database import table_of
from horde.workers.models import Worker

#: Far above any worker's threads (a pop declares at most 50): the busy count of a worker off duty.
OFF_DUTY_THREADS = 1_000_000
DEFAULT_MAINTENANCE_MESSAGE = "This worker has been put into maintenance mode by its owner"

_WORKERS = table_of(Worker)
_OFF_DUTY_ROW = (
    select(case((or_(_WORKERS.c.maintenance, _WORKERS.c.deleted_at.is_not(None)), OFF_DUTY_THREADS), else_=0))
    .where(_WORKERS.c.id == bindparam("worker"))
    .scalar_subquery()
)
#: Threads a pop counts busy for being off duty (bind parameter `worker`): a worker row gone counts as deleted.
OFF_DUTY = func.coalesce(_OFF_DUTY_ROW, OFF_DUTY_THREADS)


def is_off_duty(busy: int) -> bool:
    """A busy count from a look that added OFF_DUTY (less the jobs a submit ends) says the worker is off duty."""
    return busy >= OFF_DUTY_THREADS // 2


def refusal(session: Session, worker_id: str) -> errors.WorkerMaintenance | None:
    """What a pop of a worker off duty answers: the AI Horde's 403 WorkerMaintenance with its owner's message;
    None for a deleted worker, whose pop answers no job (its next check-in makes a new worker of that name)."""
    row = session.execute(
        select(_WORKERS.c.maintenance, _WORKERS.c.maintenance_msg, _WORKERS.c.deleted_at).where(
            _WORKERS.c.id == worker_id
        )
    ).first()
    if row is None or row.deleted_at is not None or not row.maintenance:
        return None
    return errors.WorkerMaintenance(row.maintenance_msg or DEFAULT_MAINTENANCE_MESSAGE)
