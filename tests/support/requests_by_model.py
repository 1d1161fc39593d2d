"""The chat requests made for a model, ended ones included, for tests that look at what a call created.

The model rows (chat_request_models) serve the queue and are dropped once a request ends (horde/chat/
model_rows.py), so history is read from the requests' own `models` column."""

from __future__ import annotations

from sqlalchemy import select

from horde.chat.models import ChatRequest


def request_ids_for_model(db, model: str) -> list[str]:
    """Ids of the requests that accept `model`, oldest first."""
    with db.read() as session:
        rows = session.execute(select(ChatRequest.id, ChatRequest.models).order_by(ChatRequest.created_at)).all()
    return [request_id for request_id, models in rows if model in (models or [])]
