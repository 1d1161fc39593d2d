"""OpenAI's cursor pages (`after`, `limit`; `first_id`, `last_id`, `has_more`), as /v1/files and /v1/batches list."""

from __future__ import annotations

from flask import request

from horde import errors
from horde.oai.screening.base import check_range


def limit_param(default: int, maximum: int) -> int:
    """The query's `limit`, from 1 to `maximum`; `default` when absent."""
    raw = request.args.get("limit")
    if raw is None:
        return default
    if not raw.lstrip("-").isdigit():
        raise errors.BadRequest(f"Invalid 'limit': expected an integer, but got {raw!r} instead.", param="limit")
    check_range(int(raw), "limit", 1, maximum, code=errors.BadRequest.rc)
    return int(raw)


def list_object(data: list[dict], more: bool) -> dict:
    """A page of `data` (objects with an id), and whether more follow it."""
    return {
        "object": "list",
        "data": data,
        "first_id": data[0]["id"] if data else None,
        "last_id": data[-1]["id"] if data else None,
        "has_more": more,
    }
