"""Keeping a request's progress posts, in order, as the deltas they add: the durable source of its stream.

A worker posts the whole text so far; for a request whose progress is kept (chat_requests.progress_log), the
dispatch's progress route hands `Keeper` to chat's lifecycle.progress, which calls it in the post's transaction
before the text is stored. Under the request's row lock it compares the post with the text stored so far and
writes what the post adds as one `progress_entries` row, numbered by the request's progress_seq; a post that adds
nothing writes nothing. Requests whose progress is not kept never reach it (decision 0031).

A post whose text no longer continues the kept text (a worker that rewrote what a client may have read) ends
the request as a diverged stream ends: cancelled, charged for the text kept, with ChatStreamDiverged as its
reason.
"""

from __future__ import annotations

from sqlalchemy import bindparam, insert, select, update
from sqlalchemy.orm import Session

from horde import errors
from horde.background.models import ProgressEntry
from horde.chat import lifecycle
from horde.chat.lifecycle import OwnedJob
from horde.chat.models import PROCESSING, PROGRESS_KEPT, PROGRESS_KEPT_SHOWN, ChatRequest
from horde.config import Settings
from horde.storage.database import is_postgresql, table_of

_REQUESTS = table_of(ChatRequest)
_KEPT_SO_FAR = select(
    _REQUESTS.c.state,
    _REQUESTS.c.current_job_id,
    _REQUESTS.c.progress_content,
    _REQUESTS.c.progress_reasoning,
    _REQUESTS.c.progress_seq,
    _REQUESTS.c.progress_log,
).where(_REQUESTS.c.id == bindparam("request"))
_KEPT_SO_FAR_LOCKED = _KEPT_SO_FAR.with_for_update()
_INSERT_ENTRY = insert(table_of(ProgressEntry))
_SHOWN = (
    update(_REQUESTS)
    .where(_REQUESTS.c.id == bindparam("request"), _REQUESTS.c.progress_log == PROGRESS_KEPT)
    .values(progress_log=PROGRESS_KEPT_SHOWN)
)
REWRITTEN = "the worker's text changed after it was kept for the response's stream."


class Keeper:
    """lifecycle.KeepProgress for one progress call; `ended` tells the caller to publish the request's end."""

    def __init__(self, settings: Settings):
        self.settings = settings
        self.ended = False

    def __call__(self, session: Session, job: OwnedJob, content: str, reasoning: str) -> bool:
        statement = _KEPT_SO_FAR_LOCKED if is_postgresql(session) else _KEPT_SO_FAR
        row = session.execute(statement, {"request": job.request_id}).first()
        if row is None or row.state != PROCESSING or row.current_job_id != job.id:
            return True  # not the running job: the progress's own statement refuses it
        kept_content, kept_reasoning = row.progress_content or "", row.progress_reasoning or ""
        if not (content.startswith(kept_content) and reasoning.startswith(kept_reasoning)):
            self._end_rewritten(session, job.request_id, len(kept_content) + len(kept_reasoning))
            return False
        added_content, added_reasoning = content[len(kept_content) :], reasoning[len(kept_reasoning) :]
        if not added_content and not added_reasoning:
            return True
        entry = {
            "request_id": job.request_id,
            "seq": row.progress_seq + 1,
            "job_id": job.id,
            "content": added_content,
            "reasoning": added_reasoning,
        }
        session.execute(_INSERT_ENTRY, entry)
        if row.progress_log == PROGRESS_KEPT:
            session.execute(_SHOWN, {"request": job.request_id})
        return True

    def _end_rewritten(self, session: Session, request_id: str, kept_chars: int) -> None:
        request = lifecycle.lock_request(session, request_id)
        diverged = errors.ChatStreamDiverged(f"The stream of request {request_id} diverged: {REWRITTEN}")
        self.ended = lifecycle.cancel(
            session,
            self.settings,
            request,
            streamed_chars=kept_chars,
            rc=diverged.rc,
            message=diverged.message,
        )
