"""What a request's log line says beyond method, route and status: noted by the code that learns it."""

from __future__ import annotations

from flask import has_request_context, request

RECORD_ENVIRON_KEY = "horde.log"


def note(**fields: object) -> None:
    """Add fields (user, chat_request, worker, ...) to the current request's log line; outside a request, nothing."""
    if has_request_context():
        note_in(request.environ, **fields)


def note_in(environ: dict, **fields: object) -> None:
    """The same, for code that runs after the request context (a stream's generator) and kept the environ."""
    record = environ.get(RECORD_ENVIRON_KEY)
    if record is not None:
        record.update(fields)
