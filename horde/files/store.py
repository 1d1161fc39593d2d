"""Where a file's bytes live: chunks in the database (the default), or one file in a directory (HORDE_FILES_DIR).

Both are written in pieces as the bytes come and read in pieces from any byte offset, so that neither an upload nor
a read holds a file whole: at most CHUNK_BYTES a piece. A database chunk is written in a short transaction of its
own, so that a long upload never holds SQLite's write lock between two pieces; a directory's file is written beside
its final name and renamed there when whole.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Protocol

from sqlalchemy import bindparam, delete, insert, select

from horde.files.models import IN_DATABASE, IN_DIRECTORY, FileChunk
from horde.storage import precompiled
from horde.storage.database import Database, table_of

#: A database chunk, and a read of either store: large enough that a 100 MB file is 400 rows, small enough that a
#: read or a write holds little.
CHUNK_BYTES = 256 * 1024
PARTIAL_SUFFIX = ".part"

_CHUNKS = table_of(FileChunk)
_WRITE_CHUNK = insert(_CHUNKS)
_READ_CHUNK = select(_CHUNKS.c.data).where(_CHUNKS.c.file_id == bindparam("file_id"), _CHUNKS.c.seq == bindparam("seq"))
_DELETE_CHUNKS = delete(_CHUNKS).where(_CHUNKS.c.file_id == bindparam("file_id"))


class Writer(Protocol):
    def write(self, data: bytes) -> None: ...

    def close(self) -> None:
        """The bytes written are whole: readable from now on."""

    def discard(self) -> None:
        """Forget what was written (a refused or broken upload)."""


class Content(Protocol):
    name: str

    def writer(self, file_id: str) -> Writer: ...

    def read(self, file_id: str, offset: int = 0) -> Iterator[bytes]:
        """The file's bytes from `offset` on, in pieces of at most CHUNK_BYTES."""
        ...

    def delete(self, file_id: str) -> None: ...


class DatabaseContent:
    name = IN_DATABASE

    def __init__(self, db: Database):
        self.db = db

    def writer(self, file_id: str) -> Writer:
        return _ChunkWriter(self.db, file_id)

    def read(self, file_id: str, offset: int = 0) -> Iterator[bytes]:
        seq, skip = divmod(offset, CHUNK_BYTES)
        while True:
            with self.db.read() as session:
                data = precompiled.execute(session.connection(), _READ_CHUNK, {"file_id": file_id, "seq": seq}).scalar()
            if data is None:
                return
            piece = bytes(data)[skip:]
            if piece:
                yield piece
            if len(data) < CHUNK_BYTES:
                return
            seq, skip = seq + 1, 0

    def delete(self, file_id: str) -> None:
        with self.db.transaction() as session:
            precompiled.execute(session.connection(), _DELETE_CHUNKS, {"file_id": file_id})


class _ChunkWriter:
    """Fills CHUNK_BYTES and writes it; every chunk but the last is full, so an offset names its chunk."""

    def __init__(self, db: Database, file_id: str):
        self.db, self.file_id = db, file_id
        self.pending = bytearray()
        self.seq = 0

    def write(self, data: bytes) -> None:
        self.pending += data
        while len(self.pending) >= CHUNK_BYTES:
            self._flush(bytes(self.pending[:CHUNK_BYTES]))
            del self.pending[:CHUNK_BYTES]

    def close(self) -> None:
        if self.pending or self.seq == 0:
            self._flush(bytes(self.pending))
            self.pending.clear()

    def discard(self) -> None:
        self.pending.clear()
        DatabaseContent(self.db).delete(self.file_id)

    def _flush(self, piece: bytes) -> None:
        with self.db.transaction() as session:
            params = {"file_id": self.file_id, "seq": self.seq, "data": piece}
            precompiled.execute(session.connection(), _WRITE_CHUNK, params)
        self.seq += 1


class DirectoryContent:
    name = IN_DIRECTORY

    def __init__(self, directory: str):
        self.directory = Path(directory)

    def path(self, file_id: str) -> Path:
        return self.directory / file_id

    def writer(self, file_id: str) -> Writer:
        self.directory.mkdir(parents=True, exist_ok=True)
        return _FileWriter(self.path(file_id))

    def read(self, file_id: str, offset: int = 0) -> Iterator[bytes]:
        try:
            handle = open(self.path(file_id), "rb")  # closed below, after the last piece
        except FileNotFoundError:
            return
        with handle:
            handle.seek(offset)
            while piece := handle.read(CHUNK_BYTES):
                yield piece

    def delete(self, file_id: str) -> None:
        for path in (self.path(file_id), self.path(file_id).with_name(file_id + PARTIAL_SUFFIX)):
            path.unlink(missing_ok=True)


class _FileWriter:
    def __init__(self, path: Path):
        self.path = path
        self.partial = path.with_name(path.name + PARTIAL_SUFFIX)
        self.handle = open(self.partial, "wb")  # closed by close() or discard()

    def write(self, data: bytes) -> None:
        self.handle.write(data)

    def close(self) -> None:
        self.handle.flush()
        os.fsync(self.handle.fileno())
        self.handle.close()
        os.replace(self.partial, self.path)

    def discard(self) -> None:
        self.handle.close()
        self.partial.unlink(missing_ok=True)


def content_of(db: Database, files_dir: str | None, store: str | None = None) -> Content:
    """The store of a file kept in `store` (None: where new files go: HORDE_FILES_DIR when set)."""
    if store == IN_DIRECTORY or (store is None and files_dir):
        if not files_dir:
            raise LookupError("a file kept in HORDE_FILES_DIR, which is not set")
        return DirectoryContent(files_dir)
    return DatabaseContent(db)
