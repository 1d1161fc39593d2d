"""Requests and tokens served, over the last minute, hour, day, month and in total (the AI Horde's stats shape)."""

from __future__ import annotations

from sqlalchemy import func
from sqlalchemy.orm import Session

from horde.chat.models import DONE, ChatRequest
from horde.stats import windows
from horde.stats.series import SeriesName, ServedRows
from horde.storage.database import table_of
from horde.timeutil import utcnow

WINDOWS_S: dict[str, int | None] = {"minute": 60, "hour": 3600, "day": 86_400, "month": 30 * 86_400, "total": None}

_REQUESTS = table_of(ChatRequest)
#: The model counted for a served request that names none (a row written by hand; a claim always names one).
UNKNOWN_MODEL = "unknown"
#: Chat requests served: done, when they finished, with the completion tokens their workers reported (0 if none),
#: per model (the console's series), and the user who asked (its usage by day).
SERVED = ServedRows(
    name=SeriesName.CHAT,
    at=_REQUESTS.c.finished_at,
    served=_REQUESTS.c.state == DONE,
    tokens=func.coalesce(_REQUESTS.c.reply["usage"]["completion_tokens"].as_integer(), 0),
    model=func.coalesce(_REQUESTS.c.served_model, UNKNOWN_MODEL),
    user=_REQUESTS.c.user_id,
)


def totals(session: Session) -> dict:
    """Per window, how many requests were served and how many tokens they generated."""
    counts = windows.served(session, SERVED, WINDOWS_S, utcnow())
    return {name: {"requests": count.requests, "tokens": count.tokens} for name, count in counts.items()}
