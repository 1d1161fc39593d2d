"""The parts of the Runtime (horde/runtime.py) that text reads, a Protocol as chat's (horde/chat/parts.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from horde.chat.parts import ChatParts

if TYPE_CHECKING:
    from horde.text.checkin import TextWorkerView
    from horde.workers.checkins import CheckIns


class TextParts(ChatParts, Protocol):
    text_checkins: CheckIns[TextWorkerView]
