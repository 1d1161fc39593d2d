"""Worker invite-only mode (PUT /api/v2/status/modes `invite_only_mode`): a user adds a new worker only while it has
fewer than the workers a moderator invited it to add (PUT /api/v2/users/{id} `worker_invited`), as on the AI Horde.

Read on a worker's first pop alone (the mode's row, then the owner's): a pop of a worker that exists reads nothing
here. The owner's row is locked while its workers are counted (PostgreSQL), so first pops of two new workers at
once count one after the other."""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from horde import errors
from horde.accounts.models import User
from horde.oversight.view import read_modes
from horde.storage.database import is_postgresql
from horde.workers.models import Worker


def check(session: Session, owner_id: int) -> None:
    """403 WorkerInviteOnly when the mode is on and the owner has as many live workers as it was invited to add."""
    if not read_modes(session).invite_only_mode:
        return
    invited = select(User.worker_invited).where(User.id == owner_id)
    allowed = session.scalar(invited.with_for_update() if is_postgresql(session) else invited) or 0
    count = session.scalar(
        select(func.count()).select_from(Worker).where(Worker.owner_id == owner_id, Worker.deleted_at.is_(None))
    )
    if (count or 0) >= allowed:
        raise errors.WorkerInviteOnly(_message(count or 0))


def _message(workers: int) -> str:
    if workers == 0:
        return "This Horde has been switched to worker invite-only mode. Please contact the moderators to add a worker."
    return (
        f"This Horde has been switched to worker invite-only mode and you already have {workers} workers. "
        "Please contact the moderators to add more."
    )
