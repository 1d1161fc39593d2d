"""GET /status/performance: the AI Horde's HordePerformance, from this Horde's own figures.

The text fields describe what the AI Horde's text clients are served by and wait behind: the workers that popped
text within the online window and their threads, and the text generations waiting or running with the tokens they
ask for (`max_length` each). `past_minute_tokens` is the Horde's output in the last minute, the tokens of text
generations and chat replies together, as the AI Horde counts every token its text workers generate. The image and
interrogation fields are 0: this Horde has neither. Read at most once a second per process.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from horde.chat import stats as chat_stats
from horde.stats import windows
from horde.text import roster
from horde.text import stats as text_stats
from horde.text.models import PROCESSING, WAITING, TextRequest
from horde.timeutil import utcnow

if TYPE_CHECKING:
    from horde.config import Settings
    from horde.runtime import Runtime

PAST_MINUTE = {"minute": 60}
NONE_OF_THESE = {
    "queued_requests": 0,
    "worker_count": 0,
    "thread_count": 0,
    "queued_megapixelsteps": 0.0,
    "past_minute_megapixelsteps": 0.0,
    "queued_forms": 0.0,
    "interrogator_count": 0,
    "interrogator_thread_count": 0,
}
_GENERATIONS_LEFT = TextRequest.waiting + TextRequest.processing
_QUEUED = select(
    func.coalesce(func.sum(_GENERATIONS_LEFT), 0),
    func.coalesce(func.sum(_GENERATIONS_LEFT * TextRequest.max_length), 0),
).where(TextRequest.state.in_((WAITING, PROCESSING)))


def performance(runtime: Runtime) -> dict:
    """The figures, up to a second old."""

    def read() -> dict:
        with runtime.db.read() as session:
            return figures(session, runtime.settings)

    return runtime.snapshots.cached("horde-performance", read)


def figures(session: Session, settings: Settings) -> dict:
    online = roster.online_now(session, settings.worker_online_window_s)
    generations, tokens = session.execute(_QUEUED).one()
    now = utcnow()
    past_minute = sum(
        windows.served(session, served, PAST_MINUTE, now)["minute"].tokens
        for served in (text_stats.SERVED, chat_stats.SERVED)
    )
    return {
        "queued_text_requests": int(generations),
        "text_worker_count": len(online),
        "text_thread_count": sum(worker.threads for worker in online),
        "queued_tokens": float(tokens),
        "past_minute_tokens": float(past_minute),
        **NONE_OF_THESE,
    }
