"""Served rows at chosen moments, for the stats' windows and rollups: done chat requests with their completion
tokens, and submitted text generations with their model and tokens."""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Iterable

from sqlalchemy import insert

from horde.chat.models import DONE, ChatRequest
from horde.text import models as text_models
from tests.support import history


def chat(runtime, user_id: int, served: Iterable[tuple[dt.datetime, int]]) -> None:
    """A done chat request per (finished at, completion tokens)."""
    rows = []
    for at, tokens in served:
        row = history.chat_request(str(uuid.uuid4()), user_id, DONE, at - dt.timedelta(seconds=1))
        rows.append(row | {"finished_at": at, "reply": {"usage": {"completion_tokens": tokens}}})
    with runtime.db.transaction() as session:
        session.connection().execute(insert(ChatRequest), rows)


def text(runtime, user_id: int, worker_id: str, served: Iterable[tuple[dt.datetime, str, int]]) -> None:
    """A text request with one submitted generation per (ended at, model, tokens)."""
    requests, jobs = [], []
    for at, model, tokens in served:
        request_id, started = str(uuid.uuid4()), at - dt.timedelta(seconds=1)
        requests.append(history.done_text_request(request_id, user_id, started, model))
        jobs.append(history.submitted_text_job(str(uuid.uuid4()), request_id, worker_id, model, tokens, started, at))
    with runtime.db.transaction() as session:
        session.connection().execute(insert(text_models.TextRequest), requests)
        session.connection().execute(insert(text_models.TextJob), jobs)
