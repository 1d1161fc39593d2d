"""Requests and tokens served, over the last minute, hour, day, month and in total (the AI Horde's stats shape)."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import case, func, select
from sqlalchemy.orm import Session

from horde.chat.models import DONE, ChatRequest
from horde.timeutil import utcnow

WINDOWS_S = {"minute": 60, "hour": 3600, "day": 86_400, "month": 30 * 86_400}


def totals(session: Session) -> dict:
    """One pass over the finished requests: per window, how many were served and how many tokens they generated."""
    now = utcnow()
    tokens = func.coalesce(ChatRequest.reply["usage"]["completion_tokens"].as_integer(), 0)
    columns: list = []
    for seconds in WINDOWS_S.values():
        recent = ChatRequest.finished_at >= now - dt.timedelta(seconds=seconds)
        columns += [func.sum(case((recent, 1), else_=0)), func.sum(case((recent, tokens), else_=0))]
    columns += [func.count(), func.sum(tokens)]
    row = session.execute(select(*columns).where(ChatRequest.state == DONE)).one()
    values = [int(value or 0) for value in row]
    names = list(WINDOWS_S) + ["total"]
    return {name: {"requests": values[2 * index], "tokens": values[2 * index + 1]} for index, name in enumerate(names)}
