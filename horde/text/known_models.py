"""The text models the Horde has heard of: each one a worker declared on a text pop, kept after it left.

The text roster holds only the online workers (horde/text/roster.py), so that reading it costs the same on a
Horde with thousands of retired workers as on a fresh one; a model that only retired workers declared is found
here instead, read only for a model no online worker declares (a 503 for it rather than a 404). Kept apart from
chat's known_models: a chat model is not a text model.
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import Connection, select
from sqlalchemy.orm import Session

from horde.storage.database import table_of
from horde.text.models import KnownTextModel
from horde.workers.models import Worker
from horde.workers.service import remember_models, remembered_models


def remember(session: Session, names: list[str]) -> None:
    """Record newly declared text models; a name already known writes nothing."""
    remember_models(session, names, KnownTextModel)


def remembered(session: Session, names: Iterable[str]) -> set[str]:
    """Those of `names` that some worker declared on a text pop at some time."""
    return remembered_models(session, names, KnownTextModel)


def fill_from_workers(connection: Connection) -> None:
    """Every text model the workers declared on their last text pop: the table's first rows when a start creates it
    on a database that already has workers (an upgrade by restart: SQLite has no upgrade files, and an operator may
    start the server before applying sql/0009). Reads every worker's declarations once."""
    text_models = table_of(Worker).c.text_models
    names: set[str] = set()
    for (declared,) in connection.execute(select(text_models).where(text_models.is_not(None))):
        names.update(name for name in declared or () if isinstance(name, str))
    with Session(bind=connection) as session:  # joins the connection's transaction: the caller commits
        remember(session, sorted(names))
