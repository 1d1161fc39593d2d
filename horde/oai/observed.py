"""Metrics and log fields of one chat or text call, read off its waiter's events as they pass."""

from __future__ import annotations

import time
from collections.abc import Iterator

from horde.oai.waiter import Failed, Finished, Progress
from horde.observability.metrics import metrics
from horde.observability.record import note_in

DISCONNECTED = "disconnected"


def observed(events: Iterator[object], endpoint: str, environ: dict, request_id: str) -> Iterator[object]:
    """Yield `events` unchanged; count the outcome, time the first text and the end, note request and worker."""
    board = metrics()
    started = time.perf_counter()
    note_in(environ, chat_request=request_id)
    outcome, first_text = DISCONNECTED, False
    board.open_streams.labels(endpoint).inc()
    try:
        for event in events:
            if not first_text and isinstance(event, (Progress, Finished)):
                first_text = True
                board.first_token.labels(endpoint).observe(time.perf_counter() - started)
            if isinstance(event, Finished):
                outcome = event.request.state
                note_in(environ, worker=event.request.worker_name)
                if outcome == "done":
                    board.completion.labels(endpoint).observe(time.perf_counter() - started)
            elif isinstance(event, Failed):
                outcome = event.error.rc
            yield event
    finally:
        close = getattr(events, "close", None)
        if close is not None:
            close()
        board.open_streams.labels(endpoint).dec()
        board.generation_requests.labels(endpoint, outcome).inc()
