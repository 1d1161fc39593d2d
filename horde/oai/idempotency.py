"""No duplicate charged jobs: Idempotency-Key, and safe SDK retries without one.

With a key (scoped to the API key's user): the first call binds the key to its
request; the same key and body attach to that request while it runs and replay
its answer after it ended, for the retention window; another body is 409.
A refusal before queueing releases the key. Without a key: a retry of the same
body by the same user with `x-stainless-retry-count` above 0 attaches to a
request of that body whose answer no client received. See
docs/decisions/0002-idempotency-and-safe-retries.md.
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import json
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from sqlalchemy import CursorResult, Integer, Table, Update, bindparam, case, delete, select, update
from sqlalchemy.exc import IntegrityError

from horde import errors
from horde.chat import service
from horde.chat.models import FINAL_STATES, ChatRequest
from horde.oai.idempotency_models import IdempotencyKey
from horde.storage import precompiled
from horde.storage.coalesced_writes import CoalescedWrites
from horde.storage.database import table_of
from horde.storage.settle import settle
from horde.timeutil import utcnow

if TYPE_CHECKING:
    from horde.runtime import Runtime
    from horde.text.models import TextRequest

KEY_MAX_CHARS = 255
PENDING_POLL_S = 0.05
PENDING_WAIT_MAX_S = 30.0
RETRY_ATTACH_WINDOW_S = 600
IDEMPOTENCY_HEADER = "Idempotency-Key"
REPLAYED_HEADER = "Idempotent-Replayed"
STREAM_ONLY_KEYS = ("stream", "stream_options")
#: Tables whose rows keep body_hash, holders and delivered: chat requests, and text requests (/v1/completions).
RequestTable = type[ChatRequest] | type["TextRequest"]


def check_key(value: str | None) -> str | None:
    if value is None:
        return None
    if not 1 <= len(value) <= KEY_MAX_CHARS or not value.isprintable() or not value.isascii():
        raise errors.InvalidIdempotencyKey(
            f"The Idempotency-Key header must be 1 to {KEY_MAX_CHARS} printable ASCII characters.",
            param=IDEMPOTENCY_HEADER,
        )
    return value


def body_hash(body: dict) -> str:
    """The same request whatever its stream settings: those change the delivery, not the job."""
    essential = {key: value for key, value in body.items() if key not in STREAM_ONLY_KEYS}
    return hashlib.sha256(json.dumps(essential, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def scoped_for(anonymous: bool, key: str | None, digest: str, address: str) -> tuple[str | None, str]:
    """(key, digest) as stored: anonymous callers share one user, so their keys and retries are scoped by address."""
    if not anonymous:
        return key, digest
    return (f"{address}|{key}" if key is not None else None), scoped_hash(digest, address)


def scoped_hash(digest: str, scope: str) -> str:
    return hashlib.sha256(f"{scope}\n{digest}".encode()).hexdigest()


@dataclass
class Claim:
    """new: this call creates the request; attach: it follows `request_id`."""

    kind: str
    request_id: str | None = None


def claim(runtime: Runtime, user_id: int, key: str, digest: str) -> Claim:
    deadline = time.monotonic() + PENDING_WAIT_MAX_S
    while True:
        try:
            with runtime.db.transaction() as session:
                row = session.scalar(
                    select(IdempotencyKey).where(IdempotencyKey.user_id == user_id, IdempotencyKey.key == key)
                )
                if row is not None and row.expires_at < utcnow():
                    session.delete(row)
                    session.flush()
                    row = None
                if row is None:
                    session.add(
                        IdempotencyKey(
                            user_id=user_id,
                            key=key,
                            body_hash=digest,
                            expires_at=utcnow() + dt.timedelta(seconds=runtime.settings.idempotency_retention_s),
                        )
                    )
                    return Claim("new")
                if row.body_hash != digest:
                    raise errors.IdempotencyConflict(
                        "The Idempotency-Key was already used with another request body. Use a new key for a new "
                        "request.",
                        param=IDEMPOTENCY_HEADER,
                    )
                if row.request_id is not None:
                    return Claim("attach", row.request_id)
        except IntegrityError:
            pass  # another call inserted the key first: read it again
        if time.monotonic() > deadline:
            raise errors.IdempotencyConflict(
                "The first request with this Idempotency-Key is still being admitted.", param=IDEMPOTENCY_HEADER
            )
        time.sleep(PENDING_POLL_S)


def bind(runtime: Runtime, user_id: int, key: str, request_id: str) -> None:
    """The key names the request it created (one statement)."""
    with runtime.db.autocommit() as session:
        session.execute(
            update(IdempotencyKey)
            .where(IdempotencyKey.user_id == user_id, IdempotencyKey.key == key)
            .values(request_id=request_id),
            execution_options={"synchronize_session": False},
        )


def release(runtime: Runtime, user_id: int, key: str) -> None:
    """A refusal before queueing stores nothing: the corrected request may reuse the key (one statement)."""
    with runtime.db.autocommit() as session:
        session.execute(
            delete(IdempotencyKey).where(
                IdempotencyKey.user_id == user_id, IdempotencyKey.key == key, IdempotencyKey.request_id.is_(None)
            )
        )


def retried_request(runtime: Runtime, user_id: int, digest: str, table: RequestTable = ChatRequest) -> str | None:
    """For an SDK retry without a key: the same user's latest request of the same body whose answer no
    client received yet (still running, or ended after its caller had gone)."""
    since = utcnow() - dt.timedelta(seconds=RETRY_ATTACH_WINDOW_S)
    with runtime.db.read() as session:
        return session.scalar(
            select(table.id)
            .where(
                table.user_id == user_id,
                table.body_hash == digest,
                table.delivered.is_(False),
                table.created_at >= since,
            )
            .order_by(table.created_at.desc())
            .limit(1)
        )


def release_delivered(runtime: Runtime, request_id: str, table: RequestTable = ChatRequest) -> None:
    """The answer reached its caller: one holder less, and the request counts as delivered. Nothing reads it
    back at once, so a busy process writes the releases that arrive together in one statement
    (horde/storage/coalesced_writes.py)."""
    delivered_releases(runtime, table).add(request_id)


def delivered_releases(
    runtime: Runtime, table: RequestTable = ChatRequest, *, background: bool | None = None
) -> CoalescedWrites[str]:
    """The process's coalesced releases of `table`'s requests, made on first use (`background`: see
    CoalescedWrites; by default, coalesced on gevent)."""
    kind = ("release_delivered", table)
    writes = runtime.coalesced.get(kind)
    if writes is None:
        rows = table_of(table)
        writes = runtime.coalesced[kind] = CoalescedWrites(
            f"releasing delivered {rows.name}",
            functools.partial(_release_all_delivered, runtime, rows),
            background=background,
        )
    return writes


def _release_all_delivered(runtime: Runtime, rows: Table, request_ids: Sequence[str]) -> None:
    """One holder less for each of `request_ids` (distinct), all delivered: one statement."""
    with runtime.db.autocommit() as session:
        precompiled.execute(session.connection(), _delivered_statement(rows), {"ids": list(request_ids)})


@functools.cache
def _delivered_statement(rows: Table) -> Update:
    """UPDATE of the requests `ids` (expanding): holders - 1, never below 0, and delivered."""
    return (
        update(rows)
        .where(rows.c.id.in_(bindparam("ids", expanding=True)))
        .values(holders=case((rows.c.holders > 0, rows.c.holders - 1), else_=0), delivered=True)
    )


def purge_expired(runtime: Runtime) -> int:
    """Delete keys past their retention window; the serve loop calls it with the job sweep."""
    with runtime.db.transaction() as session:
        deleted = session.execute(delete(IdempotencyKey).where(IdempotencyKey.expires_at < utcnow()))
        return cast(CursorResult, deleted).rowcount or 0


@functools.cache
def _holders_statement(rows: Table, *, delivered: bool) -> Update:
    """UPDATE of one request (`id_`): holders + `delta`, never below 0, computed by the database (no
    read-modify-write); with `delivered`, the request also counts as delivered. Built once per table."""
    delta = bindparam("delta", type_=Integer)
    changes: dict[str, Any] = {"holders": case((rows.c.holders + delta < 0, 0), else_=rows.c.holders + delta)}
    if delivered:
        changes["delivered"] = True
    return update(rows).where(rows.c.id == bindparam("id_")).values(changes)


def hold(runtime: Runtime, request_id: str, delta: int, table: RequestTable = ChatRequest) -> None:
    """Holders + `delta`, never below 0 (one statement)."""
    with runtime.db.autocommit() as session:
        precompiled.execute(
            session.connection(),
            _holders_statement(table_of(table), delivered=False),
            {"id_": request_id, "delta": delta},
        )


def abandon(
    runtime: Runtime,
    request_id: str,
    streamed_chars: int = 0,
    *,
    grace_s: float | None = None,
    table: RequestTable = ChatRequest,
    cancel: Callable[[Runtime, str], object] | None = None,
) -> None:
    """A holder's connection dropped: after the grace, cancel unless someone else holds the request.

    `cancel(runtime, request_id)` replaces the chat cancel for a TextRequest `table`. Raises
    errors.ServiceUnavailable only before the holder is released, so that a caller may retry it whole."""
    hold(runtime, request_id, -1, table)
    grace_s = runtime.settings.oai_drop_grace_s if grace_s is None else grace_s

    def cancel_if_unheld():
        if grace_s > 0:
            time.sleep(grace_s)
        with runtime.db.transaction() as session:
            request = cast("ChatRequest | TextRequest | None", session.get(table, request_id))
            unheld = request is not None and not request.holders and request.state not in FINAL_STATES
        if unheld and cancel is not None:
            cancel(runtime, request_id)
        elif unheld:
            service.cancel(runtime, None, request_id, streamed_chars=streamed_chars)

    what = f"cancelling the abandoned request {request_id}"
    if grace_s > 0:
        threading.Thread(
            target=settle, args=(what, cancel_if_unheld), name=f"abandon-{request_id}", daemon=True
        ).start()
    else:
        settle(what, cancel_if_unheld)
