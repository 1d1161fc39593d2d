"""Batches kept for HORDE_FILES_RETENTION_S after they ended, as their output and error files are: then their rows
and their lines go, a bounded number per sweep."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import delete, func, select

from horde.batches.models import FINAL, Batch, BatchLine
from horde.batches.parts import BatchParts
from horde.timeutil import utcnow

#: Batches dropped at most per call, so that a sweep stays short; the next one goes on.
PURGE_BATCH = 20


def purge_ended(runtime: BatchParts) -> int:
    """Drop the batches that ended more than the retention ago, with their lines; how many."""
    cutoff = utcnow() - dt.timedelta(seconds=runtime.settings.files_retention_s)
    ended_at = func.coalesce(Batch.completed_at, Batch.failed_at, Batch.expired_at, Batch.cancelled_at)
    with runtime.db.read() as session:
        due = list(
            session.scalars(select(Batch.id).where(Batch.status.in_(FINAL), ended_at < cutoff).limit(PURGE_BATCH))
        )
    for batch_id in due:
        with runtime.db.transaction() as session:
            session.execute(delete(BatchLine).where(BatchLine.batch_id == batch_id))
            session.execute(delete(Batch).where(Batch.id == batch_id))
    return len(due)
