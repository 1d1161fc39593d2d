"""The parts of the Runtime (horde/runtime.py) that chat reads, a Protocol as accounts' (horde/accounts/parts.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from horde.accounts.parts import AccountsParts

if TYPE_CHECKING:
    from horde.chat.affinity import Wakeups
    from horde.chat.claimed_jobs import ClaimedJobs
    from horde.chat.snapshots import Snapshots
    from horde.events.bus import LocalEventBus
    from horde.oversight.view import OversightView
    from horde.workers.checkins import CheckIns, WorkerView


class ChatParts(AccountsParts, Protocol):
    bus: LocalEventBus
    snapshots: Snapshots
    checkins: CheckIns[WorkerView]
    claimed_jobs: ClaimedJobs
    affinity_wakeups: Wakeups
    oversight: OversightView
