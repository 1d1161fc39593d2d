"""A batch's input file checked line by line before any line runs: the batch fails with the errors found (each with
its line number), or runs with its count of requests.

The file is read in pieces (horde/files/lines.py) and each line parsed within the bounds of a request body
(horde/http/request_json.py); duplicate custom_ids are found by a 16-byte digest of each, so that what the check holds
grows with the count of requests (at most HORDE_BATCH_MAX_REQUESTS), never with the file's size. Whether each
request is one its endpoint serves is not checked here: a line the Horde refuses becomes an error line when it runs.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import gevent
from gevent import monkey

from horde import errors
from horde.batches.models import Batch
from horde.batches.parts import BatchParts
from horde.files import service as files
from horde.files.lines import Line, lines
from horde.http import request_json

#: The codes of BatchInputError beside its own (invalid_file: the input file is gone), each of one refusal of a line.
INVALID_JSON_LINE, LINE_TOO_LARGE, INVALID_REQUEST_LINE = "invalid_json_line", "line_too_large", "invalid_request_line"
MISMATCHED_ENDPOINT, DUPLICATE_CUSTOM_ID = "mismatched_endpoint", "duplicate_custom_id"
TOO_MANY_REQUESTS, EMPTY_FILE = "too_many_requests", "empty_file"
INPUT_CODES = (
    INVALID_JSON_LINE,
    LINE_TOO_LARGE,
    INVALID_REQUEST_LINE,
    MISMATCHED_ENDPOINT,
    DUPLICATE_CUSTOM_ID,
    TOO_MANY_REQUESTS,
    EMPTY_FILE,
)
#: Errors listed at most; the check stops at the last.
MAX_VALIDATION_ERRORS = 100
CUSTOM_ID_MAX_CHARS = 512
LINE_KEYS = ("custom_id", "method", "url", "body")
METHOD = "POST"
#: Lines checked between two turns given to the process's other greenlets.
LINES_BETWEEN_PAUSES = 256


@dataclass
class Checked:
    total: int = 0
    errors: list[dict[str, Any]] = field(default_factory=list)


def validate(runtime: BatchParts, batch: Batch, keep_lease: Callable[[], object] | None = None) -> Checked:
    """The file's count of requests, or the errors it holds. `keep_lease` is called as the check goes, so that the
    driver of a large file keeps its lease until it is done."""
    checked = Checked()
    try:
        file = files.get(runtime, batch.user_id, batch.input_file_id, param="input_file_id", expired_too=True)
    except errors.FileNotFound as gone:
        checked.errors.append(_item(errors.BatchInputError(gone.message, param="input_file_id"), None))
        return checked
    seen: set[bytes] = set()
    limit = runtime.settings.batch_max_requests
    pieces = files.content(runtime, file)
    for line in lines(pieces, start=0, number=1, max_line_bytes=runtime.settings.max_body_bytes):
        if line.number % LINES_BETWEEN_PAUSES == 0:
            if monkey.is_module_patched("socket"):
                gevent.sleep(0)
            if keep_lease is not None:
                keep_lease()
        if line.blank:
            continue
        checked.total += 1
        if checked.total > limit:
            refusal = _refusal(TOO_MANY_REQUESTS, f"The file holds more than {limit} requests, the limit of a batch.")
            checked.errors.append(_item(refusal, line.number))
            break
        try:
            check_line(line, batch.endpoint, seen)
        except errors.BatchInputError as refusal:
            checked.errors.append(_item(refusal, line.number))
            if len(checked.errors) >= MAX_VALIDATION_ERRORS:
                break
    if checked.total == 0 and not checked.errors:
        checked.errors.append(_item(_refusal(EMPTY_FILE, "The file holds no requests."), None))
    return checked


def parsed(line: Line) -> dict[str, Any]:
    """A line as a request line: a JSON object within a request body's bounds."""
    if line.data is None:
        raise _refusal(LINE_TOO_LARGE, "The line is longer than the limit of a request body (HORDE_MAX_BODY_BYTES).")
    try:
        value = request_json.parse(line.data)
    except errors.BadRequest as refusal:
        raise _refusal(INVALID_JSON_LINE, refusal.message, refusal.param) from None
    if not isinstance(value, dict):
        raise _refusal(INVALID_JSON_LINE, "A line of a batch's file is a JSON object.")
    return value


def check_line(line: Line, endpoint: str, seen: set[bytes]) -> dict[str, Any]:
    """The line's request, or the first reason it is refused; a custom_id seen before is a duplicate."""
    value = parsed(line)
    for key in value:
        if key not in LINE_KEYS:
            raise _refusal(INVALID_REQUEST_LINE, f"Unknown key '{key}': a line holds {', '.join(LINE_KEYS)}.", key)
    custom_id = value.get("custom_id")
    if not isinstance(custom_id, str) or not 1 <= len(custom_id) <= CUSTOM_ID_MAX_CHARS:
        raise _refusal(
            INVALID_REQUEST_LINE, f"'custom_id' is a string of 1 to {CUSTOM_ID_MAX_CHARS} characters.", "custom_id"
        )
    if value.get("method") != METHOD:
        raise _refusal(INVALID_REQUEST_LINE, f"'method' is '{METHOD}'.", "method")
    if value.get("url") != endpoint:
        raise _refusal(
            MISMATCHED_ENDPOINT, f"The line's url {value.get('url')!r} is not the batch's endpoint '{endpoint}'.", "url"
        )
    if not isinstance(value.get("body"), dict):
        raise _refusal(INVALID_REQUEST_LINE, "'body' is the request's JSON object.", "body")
    digest = hashlib.blake2b(custom_id.encode(), digest_size=16).digest()
    if digest in seen:
        raise _refusal(DUPLICATE_CUSTOM_ID, f"The custom_id {custom_id!r} is on an earlier line.", "custom_id")
    seen.add(digest)
    return value


def _refusal(code: str, message: str, param: str | None = None) -> errors.BatchInputError:
    return errors.BatchInputError(message, code=code, param=param)


def _item(refusal: errors.HordeError, line: int | None) -> dict[str, Any]:
    """An item of the batch's `errors.data`."""
    return {"code": refusal.rc, "message": refusal.message, "param": refusal.param, "line": line}
