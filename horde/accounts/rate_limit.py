"""The per-caller request budget stays exact when one caller's admissions run at once (several processes).

Admission counts the caller's requests of the last RATE_WINDOW_S, then inserts the new one: two statements.
On PostgreSQL two admissions of one caller could both count limit - 1 and both be admitted, so each first
takes a transaction-scoped advisory lock keyed by the caller, in a statement of its own: the count that
follows (a later statement, so a later snapshot under READ COMMITTED) sees every request of the admissions
that held the lock before. A lock taken inside the counting statement would not do: that statement's
snapshot predates the wait. On SQLite writers run one at a time (BEGIN IMMEDIATE): nothing to take.
See docs/decisions/0009-exact-rate-limit.md.
"""

from __future__ import annotations

import hashlib

from sqlalchemy import Integer, bindparam, func, select
from sqlalchemy.orm import Session

RATE_WINDOW_S = 60
#: pg_advisory_xact_lock(classid, objid) keyspaces: classid says what objid counts. Chat and text admissions
#: share one budget, so they share these keys. ("RL" and 1 or 2, below 2**31.)
RATE_LIMIT_USER_LOCK_CLASS = 0x524C_0001  # objid: the user's id
RATE_LIMIT_ADDRESS_LOCK_CLASS = 0x524C_0002  # objid: 32 bits of the client address's SHA-256 (anonymous callers)

_TAKE_TURN = select(func.pg_advisory_xact_lock(bindparam("classid", type_=Integer), bindparam("objid", type_=Integer)))


def lock_key(user_id: int, client_address: str | None) -> tuple[int, int]:
    """(classid, objid) of the caller's budget: the user's, or with `client_address` that address's.

    Two addresses may share a key (32 bits of a hash): their admissions then take turns, nothing worse."""
    if client_address is None:
        return RATE_LIMIT_USER_LOCK_CLASS, user_id
    digest = hashlib.sha256(client_address.encode()).digest()
    return RATE_LIMIT_ADDRESS_LOCK_CLASS, int.from_bytes(digest[:4], "big", signed=True)


def take_turn(session: Session, user_id: int, client_address: str | None) -> None:
    """Wait until no other admission of this caller's budget is open, and hold the turn until this transaction
    ends. Call it before counting; only on PostgreSQL."""
    classid, objid = lock_key(user_id, client_address)
    session.connection().execute(_TAKE_TURN, {"classid": classid, "objid": objid})
