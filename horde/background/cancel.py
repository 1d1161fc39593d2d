"""A client's cancel of a background request: charged as a cancelled stream is, for the text generated so far."""

from __future__ import annotations

from typing import TYPE_CHECKING

from horde.chat import lifecycle
from horde.events.bus import request_channel

if TYPE_CHECKING:
    from horde.runtime import Runtime


def cancel(runtime: Runtime, request_id: str) -> bool:
    """Cancel the request unless it has ended; False when it had (a second cancel, a finish that came first).

    Under the request's row lock, the text its worker has posted so far is what the cancel charges: the same
    text the cancelled response shows. A submit racing the cancel either lands first (the request is done and
    charged for its reply; this is False) or finds its job cancelled."""
    with runtime.db.transaction() as session:
        request = lifecycle.lock_request(session, request_id)
        generated = len(request.progress_content or "") + len(request.progress_reasoning or "")
        cancelled = lifecycle.cancel(session, runtime.settings, request, streamed_chars=generated)
    if cancelled:
        runtime.bus.publish(request_channel(request_id))
    return cancelled
