"""Worker registry: check-in from a pop, ownership, and the online window."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from typing import TYPE_CHECKING

from sqlalchemy import select
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import Session

from horde import errors
from horde.accounts.auth import authenticate
from horde.accounts.identity import Identity
from horde.accounts.models import User
from horde.authz.check import authorize
from horde.authz.rules import Action
from horde.storage.database import Base, insert_ignoring_duplicates, is_postgresql, table_of
from horde.timeutil import utcnow
from horde.workers import invitation, names
from horde.workers.declarations import features_mask, guarantees_mask
from horde.workers.models import MAX_ADDRESS_CHARS, KnownModel, Worker

if TYPE_CHECKING:
    from horde.accounts.parts import AccountsParts


def check_in(session: Session, owner: User | Identity, pop: dict, address: str | None = None) -> Worker:
    """Create the worker on its first pop; replace its declarations on every pop, and its address (`address`, the
    pop's client address) on every one that writes."""
    if owner.anonymous:
        raise errors.AnonForbiddenWorker("The anonymous user cannot run workers.")
    worker = session.scalar(select(Worker).where(Worker.name == pop["name"]))
    declared = list(dict.fromkeys(pop["models"]))
    # Only what this worker did not declare before: a pop that repeats its declaration writes nothing here.
    remember_models(session, [name for name in declared if worker is None or name not in (worker.models or ())])
    if worker is None:
        worker = insert_new(
            session, owner, pop["name"], max_length=pop["max_length"], max_context_length=pop["max_context_length"]
        )
    if worker.owner_id != owner.id:
        raise errors.WorkerNameTaken(f"The worker name '{pop['name']}' belongs to another user.")
    worker.models = declared
    worker.max_length = pop["max_length"]
    worker.max_context_length = pop["max_context_length"]
    worker.threads = pop["threads"]
    worker.features_mask = features_mask(pop["features"])
    worker.guarantees_mask = guarantees_mask(pop["guarantees"])
    worker.max_temperature_with_tools = (pop.get("limits") or {}).get("max_temperature_with_tools")
    worker.bridge_agent = pop["bridge_agent"]
    worker.last_pop_at = utcnow()
    if address is not None:
        worker.ip_address = address[:MAX_ADDRESS_CHARS]
    session.flush()
    return worker


def insert_new(session: Session, owner: User | Identity, name: str, **columns: object) -> Worker:
    """Insert the worker `name` (with `columns`) unless a concurrent first pop of the same name did, then read
    whichever row won: the chat and the text check-ins' first pop. The caller checks the row's owner.

    An upsert rather than an INSERT: concurrent first pops of a new name all succeed (the losers wait for the
    winner's commit, then find its row), where a plain INSERT would fail on the unique name. A name that looks
    like another worker's (horde/workers/names.py) is refused (WorkerNameTaken), by the same unique key. In worker
    invite-only mode the owner may add no more workers than it was invited to (WorkerInviteOnly).
    """
    invitation.check(session, owner.id)
    insert = postgresql_insert if is_postgresql(session) else sqlite_insert
    session.execute(
        insert(Worker)
        .values(name=name, name_key=names.name_key(name), owner_id=owner.id, **columns)
        .on_conflict_do_nothing()  # the name's, or its key's: a look-alike of a worker that exists
    )
    worker = session.scalars(select(Worker).where(Worker.name == name)).first()
    if worker is None:
        raise errors.WorkerNameTaken(
            f"The worker name '{name}' looks like the name of another worker (case, width, dashes or spaces "
            "aside): choose another."
        )
    return worker


def online_cutoff(window_s: float) -> dt.datetime:
    return utcnow() - dt.timedelta(seconds=window_s)


def online_workers(session: Session, window_s: float, models: Iterable[str] | None = None) -> list[Worker]:
    """Workers that popped within the window; serving any of `models` when given."""
    workers = session.scalars(select(Worker).where(Worker.last_pop_at >= online_cutoff(window_s))).all()
    return online_among(workers, window_s, models)


def online_among(workers: Iterable[Worker], window_s: float, models: Iterable[str] | None = None) -> list[Worker]:
    cutoff, wanted = online_cutoff(window_s), set(models or ())
    return [
        worker
        for worker in workers
        if worker.last_pop_at >= cutoff and (models is None or wanted.intersection(worker.models))
    ]


def known_models(workers: Iterable[Worker]) -> set[str]:
    """Every model any of `workers` ever declared: the models the Horde has heard of."""
    names: set[str] = set()
    for worker in workers:
        names.update(worker.models or ())
    return names


def remember_models(session: Session, names: list[str], table: type[Base] = KnownModel) -> None:
    """Record newly declared models; a pop that declares what it declared before writes nothing. `table`: one with
    a `name` key and a `first_declared_at` (chat's known_models, or text's). In name order: two first pops that
    declare the same new models in different orders wait for each other's rows in one order, never in a cycle."""
    rows = [{"name": name, "first_declared_at": utcnow()} for name in sorted(set(names))]
    insert_ignoring_duplicates(session, table, rows, "name")


def remembered_models(session: Session, names: Iterable[str], table: type[Base] = KnownModel) -> set[str]:
    """Those of `names` that some worker declared at some time (in `table`)."""
    wanted = list(names)
    if not wanted:
        return set()
    name = table_of(table).c.name
    return set(session.scalars(select(name).where(name.in_(wanted))))


def owners_trust(session: Session, workers: list[Worker]) -> dict[int, bool]:
    owner_ids = {worker.owner_id for worker in workers}
    if not owner_ids:
        return {}
    return dict(session.execute(select(User.id, User.trusted).where(User.id.in_(owner_ids))).all())


def worker_owner(runtime: AccountsParts, api_key: str | None) -> Identity:
    """The owner of a worker's key: the anonymous user and shared keys run no workers (the authorization table)."""
    owner = authenticate(runtime, api_key)
    authorize(owner, Action.RUN_WORKER)
    return owner
