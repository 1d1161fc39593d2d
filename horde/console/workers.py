"""A user's workers for its console: each as GET /api/v2/workers/{id} shows it to its owner, with the figures the
console charts under plain names."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlalchemy import select
from sqlalchemy.orm import Session

from horde.registry import views
from horde.workers.models import Worker

if TYPE_CHECKING:
    from horde.config import Settings

#: The most workers listed: a user past it sees its first ones by name.
MAX_WORKERS = 500


def of_user(session: Session, settings: Settings, user_id: int, viewer: views.Viewer) -> list[dict]:
    """The user's live workers by name, each the registry's detail (its owner's view, or a moderator's) plus
    `speed` (the performance string), `jobs` (generations fulfilled), `kudos_earned` and `maintenance_msg`."""
    found = session.scalars(
        select(Worker)
        .where(Worker.owner_id == user_id, Worker.deleted_at.is_(None))
        .order_by(Worker.name)
        .limit(MAX_WORKERS)
    ).all()
    listed = []
    for worker in found:
        item = views.one(session, settings, worker, viewer)
        item.update(
            speed=item["performance"],
            jobs=item["requests_fulfilled"],
            kudos_earned=item["kudos_rewards"],
            maintenance_msg=worker.maintenance_msg,
        )
        listed.append(item)
    return listed
