"""The batch driver: every server process runs one (horde/ops/housekeeping.py starts it), and each batch is driven
by one process at a time, the holder of its lease in the database.

A process takes a batch whose lease is free or past its time by a compare-and-set, renews it while it drives the
batch, and gives it up when the batch ends. A process killed mid-batch holds its batches' leases until they lapse
(LEASE_S); another process then takes them over from what the database holds: the cursor, the lines in flight and
their requests. Nothing of a batch lives in one process's memory, so nothing is lost, and every step is a
compare-and-set, so nothing is done twice (docs/decisions/0035-a-batch-driver-in-the-database.md).

A turn of a batch, bounded: validate its file (once); or end the lines whose requests ended, queue the lines fed and
not queued yet, feed new lines up to HORDE_BATCH_MAX_IN_FLIGHT; or wind down a cancelled or expired batch; then end
the batch when every line has.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import socket
import uuid
from typing import Any

import gevent
from sqlalchemy import and_, or_, select, update

from horde import errors
from horde.accounts.identity import Identity
from horde.accounts.models import User
from horde.batches import collecting, ending, feeding, validation
from horde.batches.models import ACTIVE, IN_PROGRESS, VALIDATING, Batch
from horde.batches.parts import BatchParts
from horde.batches.runner import LineRunner
from horde.timeutil import utcnow

log = logging.getLogger(__name__)

#: How long a lease lasts: a killed process's batches wait this long at most before another process takes them.
LEASE_S = 15.0
#: A lease is renewed once less than this is left of it.
RENEW_WITHIN_S = LEASE_S / 2
#: Between two turns of the batches a process drives (their requests end meanwhile); and, with none, between two
#: looks for batches to take.
TURN_INTERVAL_S = 0.1
#: The most batches one process drives at once: the others are left to other processes, or to its next looks.
MAX_BATCHES_PER_PROCESS = 16


def process_name() -> str:
    """Who holds a lease: the host, the process, and a random part (a pid is used again after a restart)."""
    return f"{socket.gethostname()[:32]}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


class Driver:
    def __init__(self, runtime: BatchParts, runner: LineRunner, owner: str | None = None):
        self.runtime, self.runner = runtime, runner
        self.owner = owner or process_name()
        #: What the turns of the last pass changed (lines fed, queued, ended; batches moved on).
        self.changed = 0

    def run_forever(self) -> None:
        """The process's loop: turns of its batches, a pause, again. An outage skips a pass; nothing else stops it.
        The pause is TURN_INTERVAL_S after a pass that changed something, and doubles after each pass that changed
        nothing, up to HORDE_SWEEP_INTERVAL_S: batches whose workers take seconds a line cost few reads."""
        pause = TURN_INTERVAL_S
        while True:
            changed = 0
            try:
                self.pass_once()
                changed = self.changed
            except errors.ServiceUnavailable:
                pass  # the database logs the outage once; the next pass tries again
            except Exception:
                log.exception("driving the batches failed")
            pause = TURN_INTERVAL_S if changed else min(pause * 2, self.runtime.settings.sweep_interval_s)
            gevent.sleep(pause)

    def pass_once(self) -> int:
        """A turn of each batch this process holds or may take; how many batches it drove (what the turns changed:
        `changed`)."""
        driven = self.changed = 0
        for batch_id in self._candidates():
            batch = self._lease(batch_id)
            if batch is None:
                continue
            driven += 1
            try:
                self.changed += self.turn(batch)
            except errors.ServiceUnavailable:
                raise
            except Exception:  # one batch's fault does not hold the others back; its next turn tries again
                log.exception("a turn of the batch %s failed", batch_id)
        return driven

    def turn(self, batch: Batch) -> int:
        """One bounded step of `batch` (its lease held); how much changed."""
        runtime, runner = self.runtime, self.runner
        if batch.status == VALIDATING:
            checked = validation.validate(runtime, batch, keep_lease=lambda: self._lease(batch.id))
            return int(ending.validated(runtime, batch, checked))
        if batch.status == IN_PROGRESS and batch.ending is None and utcnow() >= batch.expires_at:
            return int(ending.expire(runtime, batch))
        user = self._identity(batch)
        rows = collecting.in_flight(runtime, batch.id)
        queued = runner.progress(batch.endpoint, [row.request_id for row in rows]) if rows else {}
        changed = collecting.collect(runtime, runner, batch, user, rows, queued)
        if batch.ending is not None:
            changed += ending.wind_down(runtime, runner, self._fresh(batch.id), user, rows)
        else:
            fed = feeding.feed(runtime, self._fresh(batch.id))
            if fed:
                rows = collecting.in_flight(runtime, batch.id)
            changed += fed + feeding.admit(runtime, runner, batch, user, rows, queued)
        if ending.finish(runtime, self._fresh(batch.id)):
            changed += 1
        return changed

    def _candidates(self) -> list[str]:
        """The active batches this process holds, or whose lease is free or lapsed, oldest first."""
        now = utcnow()
        free = or_(Batch.lease_until.is_(None), Batch.lease_until < now, Batch.lease_owner == self.owner)
        query = (
            select(Batch.id)
            .where(Batch.status.in_(ACTIVE), free)
            .order_by(Batch.created_at)
            .limit(MAX_BATCHES_PER_PROCESS)
        )
        with self.runtime.db.read() as session:
            return list(session.scalars(query))

    def _lease(self, batch_id: str) -> Batch | None:
        """The batch, its lease this process's for at least RENEW_WITHIN_S more (taken or renewed by a
        compare-and-set when needed); None when another process holds it or it has ended."""
        batch = self._fresh(batch_id)
        now = utcnow()
        if batch is None or batch.status not in ACTIVE:
            return None
        held = batch.lease_owner == self.owner and batch.lease_until is not None
        if held and (batch.lease_until - now).total_seconds() > RENEW_WITHIN_S:
            return batch
        until = now + dt.timedelta(seconds=LEASE_S)
        free = or_(Batch.lease_until.is_(None), Batch.lease_until < now, Batch.lease_owner == self.owner)
        with self.runtime.db.transaction() as session:
            taken = session.execute(
                update(Batch)
                .where(and_(Batch.id == batch_id, Batch.status.in_(ACTIVE), free))
                .values(lease_owner=self.owner, lease_until=until)
            ).rowcount  # type: ignore[attr-defined]  # an UPDATE's result is a CursorResult
        if taken != 1:
            return None
        batch.lease_owner, batch.lease_until = self.owner, until
        return batch

    def _fresh(self, batch_id: str) -> Any:
        with self.runtime.db.read() as session:
            return session.get(Batch, batch_id)

    def _identity(self, batch: Batch) -> Identity:
        with self.runtime.db.read() as session:
            user = session.get_one(User, batch.user_id)
            return Identity.of(user, batch.shared_key_id)
