"""One line per request: plain `key=value` text by default, a JSON object per line with HORDE_LOG_FORMAT=json.

Lines go straight to stderr, one write each: the logging module's records (caller lookup, locks) would
cost more than the rest of the line, on every request.
"""

from __future__ import annotations

import json
import re
import sys
import time

FIELD_ORDER = ("request_id", "method", "route", "path", "status", "duration_ms", "user", "chat_request", "worker")
_PLAIN = re.compile(r'[^\s"=]+')
_second = [-1, ""]


def line(record: dict, log_format: str) -> str:
    fields = {name: record[name] for name in FIELD_ORDER if record.get(name) is not None}
    fields.update({name: value for name, value in record.items() if name not in fields and value is not None})
    if log_format == "json":
        return json.dumps(dict(time=_utc_iso(), **fields), separators=(",", ":"), default=str)
    return _utc_iso() + " " + " ".join(f"{name}={_text(value)}" for name, value in fields.items())


def emit(record: dict, log_format: str) -> None:
    write(line(record, log_format) + "\n")


def write(text: str) -> None:
    sys.stderr.write(text)


def _text(value) -> str:
    if isinstance(value, (int, float)):
        return str(value)
    text = str(value)
    return text if _PLAIN.fullmatch(text) else json.dumps(text)


def _utc_iso() -> str:
    """ISO 8601 in UTC with milliseconds; the part down to the second is made once a second."""
    now = time.time()
    second = int(now)
    if _second[0] != second:
        _second[:] = [second, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))]
    return f"{_second[1]}.{int((now - second) * 1000):03d}Z"
