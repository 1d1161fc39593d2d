"""Check-ins that change nothing are not written.

A worker re-sends its declarations on every pop, several times a second under
load. This process remembers, per worker name, the row it last wrote or read: a
pop whose owner and declarations match it skips the database until
`last_pop_at` is due for a refresh (every CHECK_IN_REFRESH_S, well inside the
online window). A change of declarations is written at once.

One pop per worker and process writes a due refresh: a worker's slots pop at once,
and each writing the same row waited for the others' transactions (under
bench/load.py the wait sampled most often in PostgreSQL). The rest go on with the
view they have until the refresh is remembered, or until another CHECK_IN_REFRESH_S
has passed if it failed.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar

from horde.workers.declarations import features_mask, guarantees_mask

if TYPE_CHECKING:
    from horde.workers.models import Worker

CHECK_IN_REFRESH_S = 5.0
#: The refresh stays this many times inside the online window, however short the window is set.
REFRESHES_PER_WINDOW = 10
CHECK_IN_CACHE_MAX_ENTRIES = 100_000


@dataclass(frozen=True)
class WorkerView:
    """What a pop needs of its worker row: identity and declarations."""

    id: str
    name: str
    owner_id: int
    models: list
    max_length: int
    max_context_length: int
    threads: int
    features_mask: int
    guarantees_mask: int
    max_temperature_with_tools: float | None

    @classmethod
    def of(cls, worker: Worker) -> WorkerView:
        return cls(
            id=worker.id,
            name=worker.name,
            owner_id=worker.owner_id,
            models=list(worker.models),
            max_length=worker.max_length,
            max_context_length=worker.max_context_length,
            threads=worker.threads,
            features_mask=worker.features_mask,
            guarantees_mask=worker.guarantees_mask,
            max_temperature_with_tools=worker.max_temperature_with_tools,
        )


def common_declarations(pop: dict) -> tuple:
    """What chat and text pops both declare: models, lengths and threads."""
    return tuple(dict.fromkeys(pop["models"])), pop["max_length"], pop["max_context_length"], pop["threads"]


def declared(pop: dict) -> tuple:
    """A pop's declarations, comparable with the ones last written."""
    return (
        *common_declarations(pop),
        features_mask(pop["features"]),
        guarantees_mask(pop["guarantees"]),
        (pop.get("limits") or {}).get("max_temperature_with_tools"),
        pop["bridge_agent"],
    )


class CheckedIn(Protocol):
    """What the cache keeps of a checked-in worker: a view of its row (chat's or text's declarations)."""

    @property
    def name(self) -> str: ...

    @property
    def owner_id(self) -> int: ...


View = TypeVar("View", bound=CheckedIn)


class CheckIns(Generic[View]):
    """One kind's check-ins (chat's or text's): `declared` reads a pop body's declarations of that kind."""

    def __init__(self, refresh_s: float = CHECK_IN_REFRESH_S, declared: Callable[[dict], tuple] = declared):
        self.refresh_s = refresh_s
        self._declared = declared
        self._entries: dict[str, tuple[int, tuple, float, View]] = {}
        #: Worker name → time.monotonic() when a pop of this process took on its due refresh.
        self._refreshing: dict[str, float] = {}
        self._lock = threading.Lock()
        #: Counts the check-ins of this process that wrote a worker new to it or new declarations: a view of
        #: the workers taken before the count moved may lack them (admission's roster, chat/snapshots.py).
        self.generation = 0

    def current(self, owner_id: int, pop: dict, window_s: float) -> View | None:
        """The worker as last checked in, when nothing would change by checking in again now."""
        entry = self._entries.get(pop["name"])
        if entry is None:
            return None
        owner, declarations, written_at, view = entry
        if owner != owner_id or declarations != self._declared(pop):
            return None
        refresh_s = min(self.refresh_s, window_s / REFRESHES_PER_WINDOW)
        now = time.monotonic()
        if now - written_at < refresh_s:
            return view
        with self._lock:
            taken_at = self._refreshing.get(view.name)
            if taken_at is not None and now - taken_at < refresh_s:
                return view  # another pop here is writing the refresh
            self._refreshing[view.name] = now
        return None

    def known(self, owner_id: int, name: str) -> View | None:
        """The worker `name` of `owner_id` as it last checked in here, if it did (for what never changes, its id),
        without the look at whether a check-in is due that `current` takes."""
        entry = self._entries.get(name)
        return entry[3] if entry is not None and entry[0] == owner_id else None

    def remember(self, pop: dict, view: View, written_at: float) -> None:
        """Call after the check-in committed; `written_at` is time.monotonic() from before it began."""
        declarations = self._declared(pop)
        with self._lock:
            if len(self._entries) >= CHECK_IN_CACHE_MAX_ENTRIES:
                self._entries.clear()
                self._refreshing.clear()
            self._refreshing.pop(view.name, None)
            previous = self._entries.get(view.name)
            if previous is None or previous[:2] != (view.owner_id, declarations):
                self.generation += 1
            self._entries[view.name] = (view.owner_id, declarations, written_at, view)
