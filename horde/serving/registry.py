"""A process's open connections, bounded: at the cap, the idlest or slowest one is shed for a new one.

Each connection is in one phase. Kept-alive idle connections (and those lingering after their last answer)
are shed first, the one idle longest first; then those still sending a head or a body, the one whose
progress is oldest first (its accept, or the end of its head: trickled bytes are not progress, so a client
sending a byte a second cannot keep itself fresh). A connection whose request the app is answering (a
stream, a long-poll, a reply being written) is never shed: when every connection is such, the new one is
refused (503 too_many_connections).

Each phase is an insertion-ordered dict: entering a phase puts the connection last, so the first of a dict
is its oldest and every move is O(1).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Protocol


class Phase(StrEnum):
    IDLE = "idle"  # kept alive, waiting for the next request; or lingering after the last answer
    RECEIVING = "receiving"  # sending a head, or a body the app waits for
    ANSWERING = "answering"  # the app runs, or its answer is being written


class Member(Protocol):
    phase: Phase

    def shed(self) -> None:
        """End the connection at once, without an answer."""


class ConnectionRegistry:
    def __init__(self, cap: int) -> None:
        self.cap = cap
        #: Set when the process stops: idle connections are closed and none is kept alive.
        self.stopping = False
        self.shed_count = 0
        self._phases: dict[Phase, dict[Member, None]] = {phase: {} for phase in Phase}

    def __len__(self) -> int:
        return sum(len(members) for members in self._phases.values())

    def admit(self, member: Member) -> bool:
        """Count a new connection in (receiving), shedding one to make room at the cap; False when none can go."""
        if len(self) >= self.cap:
            victim = self._victim()
            if victim is None:
                return False
            self.drop(victim)
            self.shed_count += 1
            victim.shed()
        member.phase = Phase.RECEIVING
        self._phases[Phase.RECEIVING][member] = None
        return True

    def move(self, member: Member, phase: Phase) -> None:
        """Enter `phase` (again): the member becomes the newest of it."""
        members = self._phases[member.phase]
        if member in members:  # not when it was shed meanwhile
            del members[member]
            member.phase = phase
            self._phases[phase][member] = None

    def drop(self, member: Member) -> None:
        self._phases[member.phase].pop(member, None)

    def count(self, phase: Phase) -> int:
        return len(self._phases[phase])

    def stop(self) -> None:
        """The process stops serving: close the idle connections now, and keep none alive after its answer."""
        self.stopping = True
        for member in list(self._phases[Phase.IDLE]):
            self.drop(member)
            member.shed()

    def _victim(self) -> Member | None:
        for phase in (Phase.IDLE, Phase.RECEIVING):
            for member in self._phases[phase]:
                return member
        return None
