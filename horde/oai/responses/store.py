"""Keeping responses for HORDE_RESPONSES_RETENTION_S, per user: save, load, delete, purge."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from sqlalchemy import CursorResult, delete, select

from horde import errors
from horde.oai.responses.models import StoredResponse
from horde.storage.retention import insert_once_kept
from horde.timeutil import utcnow

if TYPE_CHECKING:
    from horde.runtime import Runtime


def save(runtime: Runtime, user_id: int, request_id: str, body: dict, conversation: list[dict]) -> None:
    """Insert once: a replay of the same request (Idempotency-Key, an SDK retry) finds it there and adds nothing."""
    row = {"id": body["id"], "user_id": user_id, "request_id": request_id, "body": body, "conversation": conversation}
    insert_once_kept(runtime.db, StoredResponse, row, runtime.settings.responses_retention_s)


def load(runtime: Runtime, user_id: int, response_id: str, param: str) -> StoredResponse:
    """The user's stored response, or 404 naming `param` (unknown, expired and another user's ids alike)."""
    with runtime.db.read() as session:
        row = session.scalar(
            select(StoredResponse).where(
                StoredResponse.id == response_id,
                StoredResponse.user_id == user_id,
                StoredResponse.expires_at > utcnow(),
            )
        )
    if row is None:
        raise errors.ResponseNotFound(f"Response with id '{response_id}' not found.", param=param)
    return row


def remove(runtime: Runtime, user_id: int, response_id: str) -> None:
    with runtime.db.transaction() as session:
        result = session.execute(
            delete(StoredResponse).where(
                StoredResponse.id == response_id,
                StoredResponse.user_id == user_id,
                StoredResponse.expires_at > utcnow(),
            )
        )
        deleted = cast(CursorResult, result).rowcount
    if not deleted:
        raise errors.ResponseNotFound(f"Response with id '{response_id}' not found.", param="response_id")


def purge_expired(runtime: Runtime) -> int:
    """Delete responses past their retention; the serve loop calls it with the idempotency keys' purge."""
    with runtime.db.transaction() as session:
        result = session.execute(delete(StoredResponse).where(StoredResponse.expires_at <= utcnow()))
        return cast(CursorResult, result).rowcount or 0
