"""One line per request: plain `key=value` text by default, a JSON object per line with HORDE_LOG_FORMAT=json."""

from __future__ import annotations

import json
import logging
import sys
import time

LOGGER_NAME = "horde.requests"
FIELD_ORDER = ("request_id", "method", "route", "path", "status", "duration_ms", "user", "chat_request", "worker")

log = logging.getLogger(LOGGER_NAME)


def configure(log_format: str) -> None:
    """Send request lines to stderr, each a whole line in the chosen format; idempotent."""
    if getattr(log, "_horde_format", None) == log_format:
        return
    for handler in list(log.handlers):
        log.removeHandler(handler)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(message)s"))
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    log.propagate = False
    log._horde_format = log_format  # type: ignore[attr-defined]


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
