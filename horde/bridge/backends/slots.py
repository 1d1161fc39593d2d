"""llama.cpp's slots, one conversation to a slot: a conversation's next turn runs on the slot that holds its
prompt in cache.

llama.cpp's server keeps each slot's last prompt in its KV cache and, with `cache_prompt`, processes only what
follows the part a new prompt shares with it. A job names its slot (`id_slot`); a slot named while busy makes
the job wait for it, so the choice here is of a free slot: the conversation's own when it is free, else the one
used least recently (whose cache is the least likely to be wanted again). The job's `conversation_key` (the
Horde's hash of the conversation) says which conversation it continues.
"""

from __future__ import annotations

import contextlib
import threading
from collections import OrderedDict
from collections.abc import Iterator


class SlotChooser:
    """The slots of one llama.cpp server, shared by the worker's threads. A slot's cache holds the prompt of the
    last job it ran, so a slot belongs to one conversation at a time: the last one it ran."""

    def __init__(self, slots: int):
        self.slots = slots
        self._lock = threading.Lock()
        self._busy: set[int] = set()
        #: Slots, least recently used first.
        self._recent: OrderedDict[int, None] = OrderedDict((slot, None) for slot in range(slots))
        #: Conversation key -> the slot that last ran it, and the reverse: at most one entry per slot.
        self._slot_of: dict[str, int] = {}
        self._conversation_on: dict[int, str] = {}

    @contextlib.contextmanager
    def slot_for(self, conversation: str | None) -> Iterator[int | None]:
        """A free slot for a job of `conversation`, held while the block runs; None when every slot is busy (the
        job then leaves the choice to the server)."""
        slot = self._take(conversation)
        try:
            yield slot
        finally:
            if slot is not None:
                with self._lock:
                    self._busy.discard(slot)

    def _take(self, conversation: str | None) -> int | None:
        with self._lock:
            slot = self._slot_of.get(conversation) if conversation else None
            if slot is None or slot in self._busy:
                slot = next((free for free in self._recent if free not in self._busy), None)
                if slot is None:
                    return None
            self._busy.add(slot)
            self._recent.move_to_end(slot)
            previous = self._conversation_on.pop(slot, None)
            if previous is not None:
                self._slot_of.pop(previous, None)  # its cache is overwritten now
            if conversation:
                old = self._slot_of.pop(conversation, None)
                if old is not None and self._conversation_on.get(old) == conversation:
                    del self._conversation_on[old]  # two copies of its prefix: this slot's will be the longer
                self._slot_of[conversation] = slot
                self._conversation_on[slot] = conversation
            return slot
