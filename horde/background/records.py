"""A background request's record: written before its request exists, found by its owner, kept for the retention.

The record is written first, so that a request never runs without it: a process killed between the two leaves a
record without a request, which reads as not found and is purged with the others.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from sqlalchemy import CursorResult, delete, select

from horde.background.models import BackgroundRequest, ProgressEntry
from horde.storage.retention import insert_once_kept
from horde.timeutil import utcnow

if TYPE_CHECKING:
    from horde.runtime import Runtime


def write(runtime: Runtime, user_id: int, public_id: str, request_id: str, recipe: dict) -> None:
    """Insert once: a retry of the same request (Idempotency-Key, an SDK retry) finds it there and adds nothing."""
    row = {"id": public_id, "user_id": user_id, "request_id": request_id, "recipe": recipe}
    insert_once_kept(runtime.db, BackgroundRequest, row, runtime.settings.responses_retention_s)


def find(runtime: Runtime, user_id: int, public_id: str) -> BackgroundRequest | None:
    """The user's record of that id while it is kept; None for an unknown, expired or another user's id."""
    with runtime.db.read() as session:
        return session.scalar(
            select(BackgroundRequest).where(
                BackgroundRequest.id == public_id,
                BackgroundRequest.user_id == user_id,
                BackgroundRequest.expires_at > utcnow(),
            )
        )


def forget(runtime: Runtime, public_id: str) -> None:
    """The record and its request's kept progress, gone (a client's delete of its response)."""
    with runtime.db.transaction() as session:
        request_id = session.scalar(select(BackgroundRequest.request_id).where(BackgroundRequest.id == public_id))
        if request_id is not None:
            session.execute(delete(ProgressEntry).where(ProgressEntry.request_id == request_id))
        session.execute(delete(BackgroundRequest).where(BackgroundRequest.id == public_id))


def purge_expired(runtime: Runtime) -> int:
    """Delete the records past their retention and their kept progress; the sweep calls it."""
    now = utcnow()
    with runtime.db.transaction() as session:
        expired = select(BackgroundRequest.request_id).where(BackgroundRequest.expires_at <= now)
        session.execute(delete(ProgressEntry).where(ProgressEntry.request_id.in_(expired)))
        result = session.execute(delete(BackgroundRequest).where(BackgroundRequest.expires_at <= now))
        return cast(CursorResult, result).rowcount or 0
