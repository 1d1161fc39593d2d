"""WSGI middleware around the app: the request id, one log line and the HTTP metrics per request.

It sees the request until the last byte of the answer is written (a stream's included), which a Flask
after_request hook cannot.
"""

from __future__ import annotations

import random
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from _typeshed.wsgi import WSGIApplication

from horde.events.drain import DRAIN
from horde.observability import request_log
from horde.observability.metrics import UNMATCHED_ROUTE, Metrics
from horde.observability.record import RECORD_ENVIRON_KEY

REQUEST_ID_HEADER = "x-request-id"
REQUEST_ID_MAX_CHARS = 200
PATH_LOG_MAX_CHARS = 200
#: Metric labels stay few: any other method a client invents is counted as one.
KNOWN_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
OTHER_METHOD = "other"


class RequestObserver:
    def __init__(self, wsgi_app: WSGIApplication, metrics: Metrics, log_format: str):
        self.wsgi_app = wsgi_app
        self.metrics = metrics
        self.log_format = log_format
        self._children: dict = {}

    def __call__(self, environ, start_response):
        started = time.perf_counter()
        given_id = _valid_request_id(environ.get("HTTP_X_REQUEST_ID"))
        record = {
            "request_id": given_id,
            "method": environ.get("REQUEST_METHOD", ""),
            "route": None,
            "path": environ.get("PATH_INFO", "")[:PATH_LOG_MAX_CHARS],
            "status": None,
        }
        record["method"] = record["method"][:PATH_LOG_MAX_CHARS]
        environ[RECORD_ENVIRON_KEY] = record

        def observed_start_response(status, headers, exc_info=None):
            record["status"] = int(status.split(" ", 1)[0])
            set_id = next((value for name, value in headers if name.lower() == REQUEST_ID_HEADER), None)
            if given_id is not None:
                headers = [(name, value) for name, value in headers if name.lower() != REQUEST_ID_HEADER]
                headers.append((REQUEST_ID_HEADER, given_id))
            elif set_id is not None:
                record["request_id"] = set_id  # the front names the answer after its chat request
            else:
                record["request_id"] = f"{random.getrandbits(128):032x}"  # an id, not a secret: no syscall
                headers = list(headers) + [(REQUEST_ID_HEADER, record["request_id"])]
            return start_response(status, headers, exc_info)

        DRAIN.request_started()
        try:
            body = self.wsgi_app(environ, observed_start_response)
        except BaseException:
            record["status"] = record["status"] or 500
            self._finish(record, started)
            raise
        return _Closing(body, lambda: self._finish(record, started))

    def _finish(self, record: dict, started: float) -> None:
        DRAIN.request_ended()
        duration_s = time.perf_counter() - started
        record["duration_ms"] = round(duration_s * 1000, 1)
        route = record["route"] or UNMATCHED_ROUTE
        method = record["method"] if record["method"] in KNOWN_METHODS else OTHER_METHOD
        counter, histogram = self._series(route, method, record["status"])
        counter.inc()
        histogram.observe(duration_s)
        record["route"] = route
        if route != UNMATCHED_ROUTE:
            del record["path"]
        request_log.emit(record, self.log_format)

    def _series(self, route: str, method: str, status: int):
        """The labelled children, kept: prometheus_client's labels() locks and builds tuples on every call."""
        key = (route, method, status)
        series = self._children.get(key)
        if series is None:
            series = self._children[key] = (
                self.metrics.http_requests.labels(route, method, str(status)),
                self.metrics.http_latency.labels(route, method),
            )
        return series


class _Closing:
    """The answer's body, with a callback when the server closes it (after the last byte, or a disconnect)."""

    __slots__ = ("body", "on_close")

    def __init__(self, body, on_close):
        self.body = body
        self.on_close = on_close

    def __iter__(self):
        return iter(self.body)

    def close(self) -> None:
        try:
            close = getattr(self.body, "close", None)
            if close is not None:
                close()
        finally:
            self.on_close()


def _valid_request_id(value: str | None) -> str | None:
    if value and len(value) <= REQUEST_ID_MAX_CHARS and value.isascii() and value.isprintable() and " " not in value:
        return value
    return None


def note_route(environ: dict, rule: str | None) -> None:
    record = environ.get(RECORD_ENVIRON_KEY)
    if record is not None:
        record["route"] = rule
