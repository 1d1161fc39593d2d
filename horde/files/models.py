"""Files and their chunks: a file's row says whose it is and what it holds; its bytes are chunks in the database,
or one file in HORDE_FILES_DIR."""

from __future__ import annotations

import datetime as dt
import uuid

from sqlalchemy import BigInteger, DateTime, ForeignKey, Index, Integer, LargeBinary, String
from sqlalchemy.orm import Mapped, mapped_column

from horde.storage.database import Base
from horde.timeutil import utcnow

#: purpose: what a user uploads for the Batch API, and what a batch writes back (its output and error files).
BATCH, BATCH_OUTPUT = "batch", "batch_output"
#: status: being written (not listed, not readable, not counted as whole); whole, readable.
UPLOADING, PROCESSED = "uploading", "processed"
#: store: where the bytes are; a batch's output lives in its lines (horde/batches/), read through the batch.
IN_DATABASE, IN_DIRECTORY, IN_BATCH = "database", "directory", "batch"


def new_file_id() -> str:
    return "file-" + uuid.uuid4().hex


class StoredFile(Base):
    __tablename__ = "files"
    #: A user's files in the order the list pages them (newest first, or oldest), and what the user's store holds.
    __table_args__ = (Index("ix_files_user_created", "user_id", "created_at", "id"),)

    id: Mapped[str] = mapped_column(String(40), primary_key=True, default=new_file_id)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"))
    purpose: Mapped[str] = mapped_column(String(16))
    filename: Mapped[str] = mapped_column(String(255))
    bytes: Mapped[int] = mapped_column(BigInteger, default=0)
    status: Mapped[str] = mapped_column(String(16), default=UPLOADING)
    store: Mapped[str] = mapped_column(String(16), default=IN_DATABASE)
    #: The batch whose output or errors the file holds (store IN_BATCH), else None.
    batch_id: Mapped[str | None] = mapped_column(String(40), nullable=True)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
    expires_at: Mapped[dt.datetime] = mapped_column(DateTime, index=True)


class FileChunk(Base):
    """One piece of a file kept in the database, in order: at most store.CHUNK_BYTES."""

    __tablename__ = "file_chunks"

    file_id: Mapped[str] = mapped_column(ForeignKey("files.id", ondelete="CASCADE"), primary_key=True)
    seq: Mapped[int] = mapped_column(Integer, primary_key=True)
    data: Mapped[bytes] = mapped_column(LargeBinary)
