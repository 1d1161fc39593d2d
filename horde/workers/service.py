"""Worker registry: check-in from a pop, ownership, and the online window."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import select
from sqlalchemy.orm import Session

from horde import errors
from horde.accounts.models import User
from horde.timeutil import utcnow
from horde.workers.declarations import features_mask, guarantees_mask
from horde.workers.models import Worker


def check_in(session: Session, owner: User, pop: dict) -> Worker:
    """Create the worker on its first pop; replace its declarations on every pop."""
    if owner.anonymous:
        raise errors.AnonForbiddenWorker("The anonymous user cannot run workers.")
    worker = session.scalar(select(Worker).where(Worker.name == pop["name"]))
    if worker is None:
        worker = Worker(name=pop["name"], owner_id=owner.id)
        session.add(worker)
    elif worker.owner_id != owner.id:
        raise errors.WorkerNameTaken(f"The worker name '{pop['name']}' belongs to another user.")
    worker.models = list(dict.fromkeys(pop["models"]))
    worker.max_length = pop["max_length"]
    worker.max_context_length = pop["max_context_length"]
    worker.threads = pop["threads"]
    worker.features_mask = features_mask(pop["features"])
    worker.guarantees_mask = guarantees_mask(pop["guarantees"])
    worker.max_temperature_with_tools = (pop.get("limits") or {}).get("max_temperature_with_tools")
    worker.bridge_agent = pop["bridge_agent"]
    worker.last_pop_at = utcnow()
    session.flush()
    return worker


def online_cutoff(window_s: float) -> dt.datetime:
    return utcnow() - dt.timedelta(seconds=window_s)


def online_workers(session: Session, window_s: float, models=None) -> list[Worker]:
    """Workers that popped within the window; serving any of `models` when given."""
    workers = session.scalars(select(Worker).where(Worker.last_pop_at >= online_cutoff(window_s))).all()
    if models is None:
        return list(workers)
    wanted = set(models)
    return [worker for worker in workers if wanted.intersection(worker.models)]


def known_models(session: Session) -> set[str]:
    """Every model any worker ever declared: a model the Horde has heard of."""
    names: set[str] = set()
    for models in session.scalars(select(Worker.models)):
        names.update(models or ())
    return names


def owners_trust(session: Session, workers: list[Worker]) -> dict[int, bool]:
    owner_ids = {worker.owner_id for worker in workers}
    if not owner_ids:
        return {}
    return dict(session.execute(select(User.id, User.trusted).where(User.id.in_(owner_ids))).all())
