"""OpenAI's Batch object, from a batch's row."""

from __future__ import annotations

import calendar
import datetime as dt
from typing import Any

from horde.batches.models import Batch

_MOMENTS = (
    "in_progress_at",
    "expires_at",
    "finalizing_at",
    "completed_at",
    "failed_at",
    "expired_at",
    "cancelling_at",
    "cancelled_at",
)


def epoch(moment: dt.datetime | None) -> int | None:
    return None if moment is None else calendar.timegm(moment.timetuple())


def batch_object(batch: Batch) -> dict[str, Any]:
    """The batch as OpenAI answers it; what it has not (yet) is left out, as OpenAI's schema has no null for it
    (errors, the files, the moments it has not reached)."""
    body: dict[str, Any] = {
        "id": batch.id,
        "object": "batch",
        "endpoint": batch.endpoint,
        "errors": {"object": "list", "data": batch.errors} if batch.errors else None,
        "input_file_id": batch.input_file_id,
        "completion_window": batch.completion_window,
        "status": batch.status,
        "output_file_id": batch.output_file_id,
        "error_file_id": batch.error_file_id,
        "created_at": epoch(batch.created_at),
    }
    body |= {name: epoch(getattr(batch, name)) for name in _MOMENTS}
    body = {key: value for key, value in body.items() if value is not None}
    body["request_counts"] = {"total": batch.total, "completed": batch.completed, "failed": batch.failed}
    body["usage"] = {
        "input_tokens": batch.input_tokens,
        "input_tokens_details": {"cached_tokens": batch.cached_tokens},
        "output_tokens": batch.output_tokens,
        "output_tokens_details": {"reasoning_tokens": batch.reasoning_tokens},
        "total_tokens": batch.input_tokens + batch.output_tokens,
    }
    body["metadata"] = batch.batch_metadata
    body["x_horde"] = {"kudos": batch.kudos_charged, "in_flight": batch.in_flight}
    return body
