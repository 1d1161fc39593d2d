"""The Status page's series: per minute of a window that ends now, generations served and their tokens (the stats
rollup's cumulative minutes, chat and text together), and the queue and workers online (the sampler's rows).

Reads a bounded number of rows whatever the history: per series the window's minute rows (at most one per minute)
and the one before it, and the window's samples (at most MAX_MODELS + 1 per minute).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

from sqlalchemy import bindparam, select
from sqlalchemy.orm import Session

from horde.chat.stats import SERVED as CHAT_SERVED
from horde.console.sampler import MAX_MODELS
from horde.stats.models import ALL_MODELS, QueueSample, ServedMark, ServedMinute
from horde.stats.series import MINUTE, ServedRows, floor_minute
from horde.storage.database import table_of
from horde.text.stats import SERVED as TEXT_SERVED
from horde.timeutil import utcnow

MIN_MINUTES, MAX_MINUTES = 10, 1440
STEP_S = 60
MAX_MODEL_CHARS = 200
SERIES: Sequence[ServedRows] = (CHAT_SERVED, TEXT_SERVED)

_MARKS, _MINUTES, _SAMPLES = table_of(ServedMark), table_of(ServedMinute), table_of(QueueSample)
_MARK = select(_MARKS.c.rolled_until).where(_MARKS.c.series == bindparam("series"))
#: A series' cumulative rows of a model from `start` on, and the latest before it (the base of the first minute).
_IN_WINDOW = (
    select(_MINUTES.c.minute, _MINUTES.c.requests, _MINUTES.c.tokens)
    .where(
        _MINUTES.c.series == bindparam("series"),
        _MINUTES.c.model == bindparam("model"),
        _MINUTES.c.minute >= bindparam("start"),
    )
    .order_by(_MINUTES.c.minute)
)
_BEFORE = (
    select(_MINUTES.c.requests, _MINUTES.c.tokens)
    .where(
        _MINUTES.c.series == bindparam("series"),
        _MINUTES.c.model == bindparam("model"),
        _MINUTES.c.minute < bindparam("start"),
    )
    .order_by(_MINUTES.c.minute.desc())
    .limit(1)
)
_SAMPLED = select(_SAMPLES.c.minute, _SAMPLES.c.model, _SAMPLES.c.queued, _SAMPLES.c.workers).where(
    _SAMPLES.c.minute >= bindparam("start")
)


def series(session: Session, minutes: int, model: str | None, now: dt.datetime | None = None) -> dict:
    """`minutes` values per series, the oldest first, the current minute last; None where unknown."""
    last = floor_minute(now or utcnow())
    start = last - (minutes - 1) * MINUTE
    wanted = ALL_MODELS if model is None else model
    requests: list[int | None] = [0] * minutes
    tokens: list[int | None] = [0] * minutes
    for rows in SERIES:
        served_requests, served_tokens = _served(session, rows, wanted, start, minutes)
        requests = _added(requests, served_requests)
        tokens = _added(tokens, served_tokens)
    queued: list[int | None] = [None] * minutes
    workers: list[int | None] = [None] * minutes
    models: dict[str, int] = {}
    for minute, name, waiting, online in session.execute(_SAMPLED, {"start": start}):
        if name != ALL_MODELS:
            models[name] = max(models.get(name, 0), int(waiting))
        if name == wanted:
            index = int((minute - start) / MINUTE)
            if 0 <= index < minutes:
                queued[index], workers[index] = int(waiting), int(online)
    listed = sorted(models, key=lambda name: (-models[name], name))[:MAX_MODELS]
    return {
        "start": start.isoformat(timespec="seconds") + "Z",
        "step_s": STEP_S,
        "models": listed,
        "series": {"requests": requests, "tokens": tokens, "queued": queued, "workers": workers},
    }


def _served(
    session: Session, rows: ServedRows, model: str, start: dt.datetime, minutes: int
) -> tuple[list[int | None], list[int | None]]:
    """Per minute, what `rows`' series served of `model` (ALL_MODELS: every model); None from its mark on."""
    mark = session.execute(_MARK, {"series": rows.name}).scalar()
    requests: list[int | None] = [None] * minutes
    tokens: list[int | None] = [None] * minutes
    if mark is None:
        return requests, tokens
    known = min(minutes, max(0, int((mark - start) / MINUTE)))
    requests[:known] = [0] * known
    tokens[:known] = [0] * known
    params = {"series": rows.name, "model": model, "start": start}
    base = session.execute(_BEFORE, params).first()
    before_requests, before_tokens = (int(base.requests), int(base.tokens)) if base is not None else (0, 0)
    for minute, cumulative_requests, cumulative_tokens in session.execute(_IN_WINDOW, params):
        index = int((minute - start) / MINUTE)
        if index < known:
            requests[index] = int(cumulative_requests) - before_requests
            tokens[index] = int(cumulative_tokens) - before_tokens
        before_requests, before_tokens = int(cumulative_requests), int(cumulative_tokens)
    return requests, tokens


def _added(first: list[int | None], second: list[int | None]) -> list[int | None]:
    """Minute by minute, the sum; None where either is unknown."""
    return [None if a is None or b is None else a + b for a, b in zip(first, second, strict=True)]
