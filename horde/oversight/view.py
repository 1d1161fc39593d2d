"""Each process's view of what moderators decided for the whole Horde: its modes, the addresses in timeout, and
the users whose requests cost more or less than their price (a usage multiplier other than 1).

Every request reads it (the address check of horde/app.py, the generation gate): it is read from the database at
most once per VIEW_S, and at once after a change. A change (a mode set, an address timed out or freed, a
multiplier) is committed, then published on OVERSIGHT_CHANNEL (`changed` below): this process's view is dropped at
once, and the others' as soon as they hear the bus (Redis has acknowledged the event before the caller's answer
leaves; each other process reads it as it comes). While a process cannot hear the others (processes sharing a
database without Redis, or Redis lost), it reads the view again within its bus's poll interval. See
docs/decisions/0039-moderation-state-in-every-process.md.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from sqlalchemy import select
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session

from horde import errors
from horde.events.bus import LocalEventBus
from horde.oversight.addresses import Matcher
from horde.oversight.models import MODES_ROW_ID, AddressTimeout, HordeModes
from horde.storage.database import Database
from horde.timeutil import utcnow

#: How long a process trusts what it read, when no change was heard.
VIEW_S = 10.0
#: After a failed read (the database lost), the view in hand serves this long before the next try.
RETRY_AFTER_FAILURE_S = 1.0
#: The most addresses or networks in timeout at once (POST /operations/ipaddr refuses more): a view stays small.
MAX_ADDRESS_TIMEOUTS = 10_000
#: The bus channel of every change of the view's contents.
OVERSIGHT_CHANNEL = "oversight"
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Modes:
    maintenance_mode: bool = False
    invite_only_mode: bool = False
    raid_mode: bool = False

    def as_dict(self) -> dict[str, bool]:
        return {
            "maintenance_mode": self.maintenance_mode,
            "invite_only_mode": self.invite_only_mode,
            "raid_mode": self.raid_mode,
        }


@dataclass(frozen=True)
class Snapshot:
    modes: Modes = field(default_factory=Modes)
    timeouts: Matcher = field(default_factory=Matcher)


def read_modes(session: Session) -> Modes:
    """The modes as stored (no row: all off)."""
    row = session.get(HordeModes, MODES_ROW_ID)
    if row is None:
        return Modes()
    return Modes(bool(row.maintenance_mode), bool(row.invite_only_mode), bool(row.raid_mode))


def read_snapshot(db: Database) -> Snapshot:
    with db.read() as session:
        modes = read_modes(session)
        now = utcnow()
        timeouts = session.execute(
            select(AddressTimeout.network, AddressTimeout.expires_at)
            .where(AddressTimeout.expires_at > now)
            .limit(MAX_ADDRESS_TIMEOUTS)
        ).all()
    wall = time.time()  # the matcher compares expiries with time.time(), the database's with utcnow()
    entries = [(network, wall + (expires - now).total_seconds()) for network, expires in timeouts]
    return Snapshot(modes=modes, timeouts=Matcher.of(entries))


class OversightView:
    """The process's Snapshot, read again once VIEW_S old or once dropped (`forget`)."""

    def __init__(
        self, db: Database, view_s: float = VIEW_S, polling_s: Callable[[], float | None] = lambda: None
    ) -> None:
        """`polling_s`: how often this process reads the database for what other processes changed while it
        cannot hear them (the bus's poll_interval_s: None while it hears them, or is alone); a view then lives no
        longer than that."""
        self._db = db
        self.view_s = view_s
        self._polling_s = polling_s
        self._snapshot: Snapshot | None = None
        self._due_at = 0.0
        #: Counts the changes heard: a read that began before one is not kept as current.
        self._generation = 0
        self._reading = threading.Lock()

    def current(self) -> Snapshot:
        """The snapshot, read afresh when due; one read at a time per process (the others wait for it, so that
        no request after a change is answered from the view before it)."""
        snapshot = self._snapshot
        if snapshot is not None and time.monotonic() < self._due_at:
            return snapshot
        with self._reading:
            snapshot = self._snapshot
            if snapshot is not None and time.monotonic() < self._due_at:
                return snapshot
            generation = self._generation
            try:
                snapshot = read_snapshot(self._db)
            except (errors.ServiceUnavailable, SQLAlchemyError):
                if self._snapshot is None:
                    raise
                log.warning("the moderation view could not be read again; the last one serves meanwhile")
                self._due_at = time.monotonic() + RETRY_AFTER_FAILURE_S
                return self._snapshot
            self._snapshot = snapshot
            polling_s = self._polling_s()
            life_s = self.view_s if polling_s is None else min(self.view_s, polling_s)
            self._due_at = time.monotonic() + life_s if generation == self._generation else 0.0
            return snapshot

    def forget(self) -> None:
        """A change was committed (here or in another process): the next request reads the view again."""
        self._generation += 1
        self._due_at = 0.0


class OversightParts(Protocol):
    """What a change of the view reads of the runtime (horde/runtime.py)."""

    bus: LocalEventBus
    oversight: OversightView


def changed(runtime: OversightParts) -> None:
    """After a committed change of what the view holds: this process's view is dropped at once, the other
    processes' as soon as they hear the bus (synchronously through Redis: published and acknowledged first)."""
    runtime.oversight.forget()
    runtime.bus.publish_now(OVERSIGHT_CHANNEL)
