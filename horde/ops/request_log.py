"""One line per request: plain `key=value` text by default, a JSON object per line with HORDE_LOG_FORMAT=json."""

from __future__ import annotations

import json
import logging
import sys
import time

LOGGER_NAME = "horde.requests"
FIELD_ORDER = ("request_id", "method", "route", "path", "status", "duration_ms", "user", "chat_request", "worker")

log = logging.getLogger(LOGGER_NAME)


class _LineHandler(logging.Handler):
    """Writes the line as it is (its format is chosen when it is made) to the current stderr."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            sys.stderr.write(record.getMessage() + "\n")
            sys.stderr.flush()
        except Exception:
            self.handleError(record)


def configure() -> None:
    """Send request lines to stderr, once per process, whatever the handlers of the root logger."""
    if any(isinstance(handler, _LineHandler) for handler in log.handlers):
        return
    log.addHandler(_LineHandler())
    log.setLevel(logging.INFO)
    log.propagate = False


def line(record: dict, log_format: str) -> str:
    fields = {name: record[name] for name in FIELD_ORDER if record.get(name) is not None}
    fields.update({name: value for name, value in record.items() if name not in fields and value is not None})
    if log_format == "json":
        return json.dumps(dict(time=_utc_iso(), **fields), separators=(",", ":"), default=str)
    return _utc_iso() + " " + " ".join(f"{name}={_text(value)}" for name, value in fields.items())


def emit(record: dict, log_format: str) -> None:
    if log.isEnabledFor(logging.INFO):
        log.info(line(record, log_format))


def _text(value) -> str:
    text = str(value)
    return json.dumps(text) if (not text or any(char in text for char in ' "=\n')) else text


def _utc_iso() -> str:
    now = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + f".{int(now % 1 * 1000):03d}Z"
