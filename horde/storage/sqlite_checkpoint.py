"""SQLite's write-ahead log checkpointed off the serving loop.

A commit that takes the log past `wal_autocheckpoint` pages copies it back into the database file itself (a
checkpoint): on the event loop's thread, with two fsyncs, and under load every few dozen requests, each page
copied once per checkpoint however often it changed in between. A server checkpoints every
CHECKPOINT_INTERVAL_S instead, in a thread of gevent's pool, where SQLite works without the GIL: no greenlet
waits for it, and a page that every request changes is copied once a checkpoint. The commits' own checkpoint
stays as the backstop, past database.SQLITE_AUTOCHECKPOINT_PAGES.
"""

from __future__ import annotations

import logging
import sqlite3

import gevent

log = logging.getLogger(__name__)

CHECKPOINT_INTERVAL_S = 1.0


def checkpoint(connection: sqlite3.Connection) -> None:
    """PASSIVE: copy what no reader still needs, without waiting for readers or writers, nor blocking them."""
    connection.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()


def run_checkpoints(path: str, interval_s: float = CHECKPOINT_INTERVAL_S) -> None:
    """Checkpoint the database file at `path` every `interval_s` until killed, on a connection of its own."""
    connection = sqlite3.connect(path, timeout=0, isolation_level=None, check_same_thread=False)
    threads = gevent.get_hub().threadpool
    running = None
    try:
        while True:
            gevent.sleep(interval_s)
            running = threads.spawn(checkpoint, connection)
            try:
                running.get()
            except sqlite3.Error:
                log.warning("checkpointing the SQLite database failed; the next checkpoint tries again", exc_info=True)
    finally:
        if running is None or running.ready():
            connection.close()
        else:  # killed while a thread still checkpoints on it: closing it under that thread crashes the process
            running.rawlink(lambda _: connection.close())


def start_checkpoints(path: str | None) -> gevent.Greenlet | None:
    """The checkpointing greenlet of a server on the SQLite file `path` (None: nothing to checkpoint)."""
    return None if path is None else gevent.spawn(run_checkpoints, path)
