"""The parts of the Runtime (horde/runtime.py) that accounts reads.

The runtime sits above the domains whose parts it builds, so a domain names what it reads of it through a
Protocol of its own (the import contract counts `if TYPE_CHECKING:` imports too): chat's (horde/chat/parts.py)
and text's (horde/text/parts.py) extend this one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from horde.accounts.identity import IdentityCache
    from horde.config import Settings
    from horde.events.bus import LocalEventBus
    from horde.storage.database import Database


class AccountsParts(Protocol):
    settings: Settings
    db: Database
    bus: LocalEventBus
    identities: IdentityCache
