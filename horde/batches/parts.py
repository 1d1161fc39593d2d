"""The parts of the Runtime (horde/runtime.py) that batches reads, a Protocol as accounts' (horde/accounts/parts.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from horde.config import Settings
    from horde.storage.database import Database


class BatchParts(Protocol):
    settings: Settings
    db: Database
