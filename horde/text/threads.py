"""A worker's threads, shared by its chat and text jobs: one statement counts both, and a worker off duty has
none free. Text sits above chat, so the count lives here; the chat pop (horde/dispatch/pop.py) reads it too.
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from horde.chat import claim as chat_claim
from horde.storage import precompiled
from horde.text import take as text_take
from horde.workers import duty

#: The worker's running jobs, chat and text together; duty.OFF_DUTY_THREADS more when it is off duty.
BUSY = chat_claim.JOBS_IN_FLIGHT + text_take.JOBS_IN_FLIGHT + duty.OFF_DUTY
_BUSY_THREADS = select(BUSY)


def busy_threads(session: Session, worker_id: str) -> int:
    """The worker's running jobs, chat and text together; duty.OFF_DUTY_THREADS more when it is off duty."""
    return precompiled.execute(session.connection(), _BUSY_THREADS, {"worker": worker_id}).scalar() or 0
