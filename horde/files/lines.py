"""The lines of a file, read in pieces from a byte offset on: what a batch validates and feeds, one line at a time.

A line longer than its limit is reported by its number and length without its bytes, which are skipped as they come:
whatever the file, a reader holds at most the limit and one piece.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

NEWLINE = b"\n"


@dataclass(frozen=True)
class Line:
    #: The line's number in the file, from 1.
    number: int
    #: The offset of its first byte, and of the byte after its newline (or the file's end).
    start: int
    end: int
    #: Its bytes without the newline (and a carriage return before it); None when longer than the limit.
    data: bytes | None

    @property
    def blank(self) -> bool:
        return self.data is not None and not self.data.strip()


def lines(pieces: Iterable[bytes], *, start: int, number: int, max_line_bytes: int) -> Iterator[Line]:
    """The lines of `pieces` (a file's bytes from offset `start`, where line `number` begins)."""
    pending = bytearray()
    line_start, too_long = start, False
    position = start  # the offset of pending's first byte
    for piece in pieces:
        pending += piece
        while True:
            cut = pending.find(NEWLINE)
            if cut < 0:
                break
            end = position + cut + 1
            too_long = too_long or cut > max_line_bytes
            yield Line(number, line_start, end, None if too_long else _without_return(bytes(pending[:cut])))
            del pending[: cut + 1]
            position, line_start, number, too_long = end, end, number + 1, False
        if len(pending) > max_line_bytes:  # no newline within the limit: skip what came, keep counting
            too_long = True
            position += len(pending)
            pending.clear()
    if pending or too_long:
        end = position + len(pending)
        too_long = too_long or len(pending) > max_line_bytes
        yield Line(number, line_start, end, None if too_long else _without_return(bytes(pending)))


def _without_return(data: bytes) -> bytes:
    return data[:-1] if data.endswith(b"\r") else data
