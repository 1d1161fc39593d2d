"""Worker names that look alike are one name: `BOB-WORKER-1`, `bob‐worker-1` (U+2010) and `ｂｏｂ-worker-1` share
a key (`name_key`), which the workers table keeps unique, so no worker impersonates another by its name.

The key: the name in NFKC, its confusable dashes and minus signs as "-", its spaces of every width as one " ",
invisible characters (zero-width spaces and joiners, soft hyphens, byte order marks) dropped, the ends trimmed,
then case folded (casefold, so "ß" is "ss"), and NFKC again (folding may undo it).
"""

from __future__ import annotations

import logging
import re
import unicodedata
from collections import defaultdict

from sqlalchemy import Connection, select, update

from horde.storage.database import table_of
from horde.workers.models import Worker

#: Dashes, hyphens and minus signs NFKC leaves as they are, read as "-".
_DASHES = "\u2010\u2011\u2012\u2013\u2014\u2015\u2043\u2212\u2e3a\u2e3b\ufe58\ufe63\uff0d\u058a\u05be\u1806"
#: Characters that show as nothing.
_INVISIBLE = "\u00ad\u034f\u061c\u115f\u1160\u180e\u200b\u200c\u200d\u200e\u200f\u2060\u2061\u2062\u2063\u2064\ufeff"
_TRANSLATION = {ord(dash): "-" for dash in _DASHES} | {ord(mark): None for mark in _INVISIBLE}
_SPACES = re.compile(r"\s+")
log = logging.getLogger(__name__)
_WORKERS = table_of(Worker)
#: Keys looked up per statement (SQLite's older limit of bound parameters is 999).
_KEYS_PER_LOOKUP = 500


def name_key(name: str) -> str:
    """What two names that read alike have in common (the module's rule)."""
    text = unicodedata.normalize("NFKC", name).translate(_TRANSLATION)
    text = _SPACES.sub(" ", text).strip()
    return unicodedata.normalize("NFKC", text.casefold())


def fill_missing_keys(connection: Connection) -> list[list[str]]:
    """Give every live worker without a key (a row written before keys existed: sql/0018_*) its key, unless another
    worker holds it already or an older worker of the same key comes first: those keep none, and are reported, as
    lists of the names that collide (the first of each list holds the key). Run by the server's start and by
    `python -m horde workers name-keys`; cheap when every worker has its key."""
    missing = connection.execute(
        select(_WORKERS.c.id, _WORKERS.c.name, _WORKERS.c.created_at)
        .where(_WORKERS.c.name_key.is_(None), _WORKERS.c.deleted_at.is_(None))
        .order_by(_WORKERS.c.created_at, _WORKERS.c.id)
    ).all()
    if not missing:
        return []
    by_key: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for worker_id, name, _created in missing:
        by_key[name_key(name)].append((worker_id, name))
    keys, held = list(by_key), {}
    for start in range(0, len(keys), _KEYS_PER_LOOKUP):
        chunk = keys[start : start + _KEYS_PER_LOOKUP]
        query = select(_WORKERS.c.name_key, _WORKERS.c.name).where(_WORKERS.c.name_key.in_(chunk))
        held.update(dict(connection.execute(query).all()))
    collisions = []
    for key, workers in by_key.items():
        if key in held:
            collisions.append([held[key], *(name for _, name in workers)])
            continue
        first_id, first_name = workers[0]
        connection.execute(update(_WORKERS).where(_WORKERS.c.id == first_id).values(name_key=key))
        if len(workers) > 1:
            collisions.append([first_name, *(name for _, name in workers[1:])])
    for names in collisions:
        log.warning("worker names that look alike: %s; only %r holds the name, rename the others", names, names[0])
    return collisions
