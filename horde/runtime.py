"""The server's shared parts: settings, database and event bus, built once per app."""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any

from horde.accounts.auth import IDENTITIES_CHANNEL
from horde.accounts.identity import IdentityCache
from horde.chat.affinity import Wakeups
from horde.chat.claimed_jobs import ClaimedJobs
from horde.chat.finish import FINISH_WIRE
from horde.chat.snapshots import Snapshots
from horde.config import Settings
from horde.events.bus import LocalEventBus
from horde.oversight.view import OVERSIGHT_CHANNEL, OversightView
from horde.storage.coalesced_writes import CoalescedWrites
from horde.storage.database import Database
from horde.text.checkin import TextWorkerView
from horde.text.checkin import declared as text_declared
from horde.workers.checkins import CheckIns, WorkerView


@dataclass
class Runtime:
    settings: Settings
    db: Database
    bus: LocalEventBus
    snapshots: Snapshots = field(default_factory=Snapshots)
    identities: IdentityCache = field(default_factory=IdentityCache)
    checkins: CheckIns[WorkerView] = field(default_factory=CheckIns)
    text_checkins: CheckIns[TextWorkerView] = field(default_factory=lambda: CheckIns(declared=text_declared))
    claimed_jobs: ClaimedJobs = field(default_factory=ClaimedJobs)
    #: The announcements of reserved requests once their reservations end (horde/chat/affinity.py).
    affinity_wakeups: Wakeups = field(default_factory=Wakeups)
    #: The process's coalesced writes, by kind (made on first use by the module that owns the kind).
    coalesced: dict[Hashable, CoalescedWrites[Any]] = field(default_factory=dict)
    #: What moderators decided for the whole Horde (modes, addresses in timeout), as this process last read it.
    oversight: OversightView = field(init=False)

    def __post_init__(self) -> None:
        self.oversight = OversightView(self.db, polling_s=self.bus.poll_interval_s)

    @classmethod
    def build(cls, settings: Settings) -> Runtime:
        db = Database(settings.database_url, settings.database_pooler)
        bus = make_event_bus(settings)
        db.on_unreachable = bus.wake_all  # waiters read at once and end with service_unavailable
        runtime = cls(settings=settings, db=db, bus=bus, identities=IdentityCache(polling_s=bus.poll_interval_s))
        bus.on(IDENTITIES_CHANNEL, runtime.identities.forget_all)  # another process replaced a key or a role
        bus.on(OVERSIGHT_CHANNEL, runtime.oversight.forget)  # a moderator changed a mode, a timeout or a multiplier
        return runtime

    def close(self) -> None:
        self.bus.close()
        self.db.dispose()


def make_event_bus(settings: Settings) -> LocalEventBus:
    """Redis when HORDE_REDIS_URL is set (imported only then), else the in-process bus.

    It lives here, above both buses, so that horde.events.bus never imports the Redis bus built on it. A submit's
    finish travels with its event to the other processes (decision 0021).
    """
    if settings.redis_url:
        from horde.events.redis_bus import RedisEventBus

        return RedisEventBus(settings.redis_url, settings.redis_prefix, handover_codec=FINISH_WIRE)
    return LocalEventBus()  # polls only while other processes share the database (horde/presence/hearing.py)
