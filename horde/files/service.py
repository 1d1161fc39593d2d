"""What the file routes do: create a file as its upload streams in, find, list, read and delete a user's files, and
keep the user's store within HORDE_FILE_STORE_MAX_BYTES. Every read is the owner's: another user's file, an expired
one and an unknown one are all not found."""

from __future__ import annotations

import calendar
import datetime as dt
from collections.abc import Callable, Iterator
from typing import Any

from sqlalchemy import and_, func, or_, select, update
from sqlalchemy.orm import Session

from horde import errors
from horde.accounts.models import User
from horde.files.models import BATCH, IN_BATCH, PROCESSED, UPLOADING, StoredFile, new_file_id
from horde.files.parts import FilesParts
from horde.files.store import Writer, content_of
from horde.storage.database import is_postgresql
from horde.timeutil import utcnow

#: An upload still `uploading` this long after it began was abandoned (its server died): the sweeper drops it.
UPLOAD_ABANDONED_S = 6 * 3600
#: Files the sweeper drops at most per call, so that a sweep stays short; the next one goes on.
PURGE_BATCH = 100
#: OpenAI's bounds of a file's expires_after seconds (an hour to 30 days).
EXPIRES_AFTER_RANGE_S = (3600, 2_592_000)
LIST_MAX_LIMIT = 10_000
FILENAME_MAX_CHARS = 255


def begin(runtime: FilesParts, user_id: int, filename: str) -> StoredFile:
    """A new file's row, `uploading`: its bytes may now be written (writer)."""
    now = utcnow()
    file = StoredFile(
        id=new_file_id(),
        user_id=user_id,
        purpose=BATCH,
        filename=_storable_name(filename),
        bytes=0,
        status=UPLOADING,
        store=content_of(runtime.db, runtime.settings.files_dir).name,
        batch_id=None,
        created_at=now,
        expires_at=now + dt.timedelta(seconds=runtime.settings.files_retention_s),
    )
    with runtime.db.transaction() as session:
        session.add(file)
    return file


def writer(runtime: FilesParts, file: StoredFile) -> Writer:
    return content_of(runtime.db, runtime.settings.files_dir, file.store).writer(file.id)


def finish(
    runtime: FilesParts, file: StoredFile, writer_of: Writer, size: int, *, purpose: str, expires_after_s: int | None
) -> StoredFile:
    """The upload is whole: its bytes readable, its row `processed`, counted in its user's store. Refused (and
    forgotten) when the user's other uploads, finished meanwhile, left no room for it: the check runs under the
    user's row lock, so two uploads of one user finish one after the other."""
    writer_of.close()
    expires_at = file.created_at + dt.timedelta(seconds=expires_after_s or runtime.settings.files_retention_s)
    try:
        with runtime.db.transaction() as session:
            check_room(runtime.settings, _used(session, file.user_id, lock=True), size)
            session.execute(
                update(StoredFile)
                .where(StoredFile.id == file.id, StoredFile.status == UPLOADING)
                .values(status=PROCESSED, bytes=size, purpose=purpose, expires_at=expires_at)
            )
    except BaseException:
        writer_of.discard()
        forget(runtime, file.id)
        raise
    file.status, file.bytes, file.purpose, file.expires_at = PROCESSED, size, purpose, expires_at
    return file


def forget(runtime: FilesParts, file_id: str) -> None:
    """Drop a file's row (its chunks with it) and its bytes in a directory."""
    with runtime.db.transaction() as session:
        file = session.get(StoredFile, file_id)
        if file is None:
            return
        store = file.store
        session.delete(file)
    if store != IN_BATCH:
        content_of(runtime.db, runtime.settings.files_dir, store).delete(file_id)


def used_bytes(runtime: FilesParts, user_id: int) -> int:
    with runtime.db.read() as session:
        return _used(session, user_id, lock=False)


def _used(session: Session, user_id: int, *, lock: bool) -> int:
    """What the user's whole files hold; with `lock` (PostgreSQL) under the user's row lock until the commit."""
    if lock and is_postgresql(session):
        session.execute(select(User.id).where(User.id == user_id).with_for_update())
    total = select(func.coalesce(func.sum(StoredFile.bytes), 0)).where(
        StoredFile.user_id == user_id, StoredFile.status == PROCESSED
    )
    return int(session.scalar(total) or 0)


def check_room(settings: Any, used: int, size: int) -> None:
    """FileStoreFull when `size` more bytes would take the user's store above HORDE_FILE_STORE_MAX_BYTES."""
    if used + size > settings.file_store_max_bytes:
        raise errors.FileStoreFull(
            f"Your files hold {used} bytes; with this one they would pass the limit of "
            f"{settings.file_store_max_bytes} bytes. Delete files you no longer need.",
            param="file",
            metadata={"used_bytes": used, "limit_bytes": settings.file_store_max_bytes},
            headers={"Connection": "close"},
        )


def get(
    runtime: FilesParts, user_id: int, file_id: str, param: str = "file_id", *, expired_too: bool = False
) -> StoredFile:
    """The user's whole file; `expired_too`: one past its expiry that is still kept (a running batch's input)."""
    with runtime.db.read() as session:
        file = session.get(StoredFile, file_id)
    expired = file is not None and file.expires_at <= utcnow() and not expired_too
    if file is None or file.user_id != user_id or file.status != PROCESSED or expired:
        raise errors.FileNotFound(f"No such File object: {file_id}", param=param)
    return file


def page(
    runtime: FilesParts, user_id: int, *, purpose: str | None, limit: int, ascending: bool, after: str | None
) -> tuple[list[StoredFile], bool]:
    """A page of the user's files by creation (ascending or not), from the one after `after`; and whether more
    follow. Keyset paging on the index of a user's files: a page reads `limit` + 1 rows."""
    conditions = [StoredFile.user_id == user_id, StoredFile.status == PROCESSED, StoredFile.expires_at > utcnow()]
    if purpose:
        conditions.append(StoredFile.purpose == purpose)
    order = (
        (StoredFile.created_at, StoredFile.id) if ascending else (StoredFile.created_at.desc(), StoredFile.id.desc())
    )
    with runtime.db.read() as session:
        if after is not None:
            mark = session.get(StoredFile, after)
            if mark is None or mark.user_id != user_id:
                raise errors.FileNotFound(f"No such File object: {after}", param="after")
            conditions.append(_beyond(mark, ascending))
        rows = list(session.scalars(select(StoredFile).where(*conditions).order_by(*order).limit(limit + 1)))
    return rows[:limit], len(rows) > limit


def _beyond(mark: StoredFile, ascending: bool) -> Any:
    if ascending:
        return or_(
            StoredFile.created_at > mark.created_at,
            and_(StoredFile.created_at == mark.created_at, StoredFile.id > mark.id),
        )
    return or_(
        StoredFile.created_at < mark.created_at,
        and_(StoredFile.created_at == mark.created_at, StoredFile.id < mark.id),
    )


def content(runtime: FilesParts, file: StoredFile, offset: int = 0) -> Iterator[bytes]:
    """An uploaded file's bytes from `offset` on, in pieces (a batch's output is read through its batch)."""
    return content_of(runtime.db, runtime.settings.files_dir, file.store).read(file.id, offset)


def remove(runtime: FilesParts, file: StoredFile) -> None:
    """Delete the user's file: its row at once (it is gone for every reader), then its bytes."""
    forget(runtime, file.id)


def record_output(
    runtime: FilesParts,
    session: Session,
    *,
    user_id: int,
    batch_id: str,
    filename: str,
    size: int,
    keep_s: int | None = None,
) -> StoredFile:
    """A batch's output or error file, whose bytes are its lines (horde/batches/): written in the caller's
    transaction, as the batch ends; kept `keep_s` (None: HORDE_FILES_RETENTION_S)."""
    now = utcnow()
    file = StoredFile(
        id=new_file_id(),
        user_id=user_id,
        purpose="batch_output",
        filename=filename,
        bytes=size,
        status=PROCESSED,
        store=IN_BATCH,
        batch_id=batch_id,
        created_at=now,
        expires_at=now + dt.timedelta(seconds=keep_s or runtime.settings.files_retention_s),
    )
    session.add(file)
    return file


def purge_expired(runtime: FilesParts, in_use: Callable[[str], bool] = lambda file_id: False) -> int:
    """Drop up to PURGE_BATCH files past their expiry, and uploads abandoned mid-way; how many. A file `in_use`
    (the input of a batch not yet ended) is kept until it is not."""
    now = utcnow()
    abandoned = now - dt.timedelta(seconds=UPLOAD_ABANDONED_S)
    with runtime.db.read() as session:
        due = (
            session.execute(
                select(StoredFile.id)
                .where(
                    or_(
                        StoredFile.expires_at <= now,
                        and_(StoredFile.status == UPLOADING, StoredFile.created_at < abandoned),
                    )
                )
                .limit(PURGE_BATCH)
            )
            .scalars()
            .all()
        )
    dropped = [file_id for file_id in due if not in_use(file_id)]
    for file_id in dropped:
        forget(runtime, file_id)
    return len(dropped)


def file_object(file: StoredFile) -> dict[str, Any]:
    """OpenAI's File object."""
    return {
        "id": file.id,
        "object": "file",
        "bytes": file.bytes,
        "created_at": _epoch(file.created_at),
        "expires_at": _epoch(file.expires_at),
        "filename": file.filename,
        "purpose": file.purpose,
        "status": "processed",
    }


def deleted_object(file_id: str) -> dict[str, Any]:
    return {"id": file_id, "object": "file", "deleted": True}


def _epoch(moment: dt.datetime) -> int:
    return calendar.timegm(moment.timetuple())


def _storable_name(filename: str) -> str:
    """The name as stored: a path's last part, without NUL (PostgreSQL text cannot hold it), at most 255 chars."""
    name = filename.replace("\\", "/").rsplit("/", 1)[-1].replace("\x00", "")
    return name[:FILENAME_MAX_CHARS] or "upload.jsonl"
