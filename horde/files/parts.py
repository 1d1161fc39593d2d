"""The parts of the Runtime (horde/runtime.py) that files reads, a Protocol as accounts' (horde/accounts/parts.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from horde.config import Settings
    from horde.storage.database import Database


class FilesParts(Protocol):
    settings: Settings
    db: Database
