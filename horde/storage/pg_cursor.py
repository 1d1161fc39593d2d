"""A psycopg cursor that describes each shape of result once per process.

SQLAlchemy reads `cursor.description` after every statement, and psycopg builds a fresh Column object per
column each time (name decoded, type looked up): for the request rows of the hot paths, about 40 columns,
that was a fifth of a statement's CPU in the driver. The columns of a result are a function of its field
names, type OIDs and type modifiers, so a description is kept for that key and handed out again; the key is
read from the result itself, so a result of another shape (a changed table, another statement) never gets a
description that is not its own.
"""

from __future__ import annotations

from typing import Any

import psycopg

#: Distinct result shapes kept per process; the hot paths have a few dozen. Past it, descriptions are built
#: as psycopg builds them (nothing is evicted, nothing grows).
MAX_SHAPES = 1024
_descriptions: dict[tuple, list[Any]] = {}


class DescribedOnceCursor(psycopg.Cursor):
    @property
    def description(self) -> list[Any] | None:
        result = self.pgresult
        if result is None or not result.nfields:
            return super().description
        fields = range(result.nfields)
        shape = (tuple(map(result.fname, fields)), tuple(map(result.ftype, fields)), tuple(map(result.fmod, fields)))
        described = _descriptions.get(shape)
        if described is None:
            described = super().description
            if described is not None and len(_descriptions) < MAX_SHAPES:
                _descriptions[shape] = described
        return described
