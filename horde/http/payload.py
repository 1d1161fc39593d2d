"""Loading a native payload with its marshmallow schema, for every native route and the front's hand-over.

A failure is 400 BadRequest naming the first failing key, so every payload is refused the same way.

A body that its clients send again byte for byte (a worker's pop, every few seconds) is loaded once:
RepeatedBodies keeps the load by the raw body, so a repeat costs neither the JSON parse nor the schema.
"""

from __future__ import annotations

import threading
from typing import Any

from marshmallow import Schema, ValidationError
from marshmallow.schema import SCHEMA

from horde import errors
from horde.http import request_json

#: The repeated bodies kept per schema, and the largest kept: at most about 4 MiB of raw bodies, and their loads.
REPEATED_BODIES_MAX_ENTRIES = 1024
REPEATED_BODY_MAX_BYTES = 4096


def load(schema: Schema, data: Any) -> dict:
    """Validate `data`; a failure is 400 BadRequest naming the first failing key."""
    if not isinstance(data, dict):
        raise errors.BadRequest("The request body must be a JSON object.")
    try:
        return schema.load(data)
    except ValidationError as error:
        param, message = _first_error(error.messages)
        raise errors.BadRequest(f"Invalid '{param}': {message}", param=param) from None


def _first_error(messages, prefix=""):
    if isinstance(messages, dict):
        key = sorted(messages, key=str)[0]
        if key == SCHEMA and prefix:  # a nested object's own error (not an object, a cross-field check): its path
            return _first_error(messages[key], prefix)
        path = (
            f"{prefix}.{key}"
            if prefix and not isinstance(key, int)
            else (f"{prefix}[{key}]" if isinstance(key, int) else str(key))
        )
        return _first_error(messages[key], path)
    if isinstance(messages, list) and messages:
        first = messages[0]
        if isinstance(first, (dict, list)):
            return _first_error(first, prefix)
        return prefix, str(first)
    return prefix, str(messages)


class RepeatedBodies:
    """`load` for raw bodies that recur: a body loaded before (byte for byte) is answered from its kept load.

    Only a body that loaded is kept (a refused one is refused again, each time), and only up to
    REPEATED_BODY_MAX_BYTES; past REPEATED_BODIES_MAX_ENTRIES the oldest kept goes first. Each caller gets its
    own copy of the load, which it may change.
    """

    def __init__(self, schema: Schema, *, max_entries: int = REPEATED_BODIES_MAX_ENTRIES):
        self.schema = schema
        self.max_entries = max_entries
        self._loads: dict[bytes, dict] = {}
        self._evicting = threading.Lock()

    def load(self, raw: bytes) -> dict:
        """`raw` parsed (request_json.parse) and loaded with the schema; refused as `load` refuses it."""
        kept = self._loads.get(raw)
        if kept is not None:
            return _copied(kept)
        loaded = load(self.schema, request_json.parse(raw))
        if len(raw) > REPEATED_BODY_MAX_BYTES:
            return loaded
        with self._evicting:  # no other thread's insert between finding the oldest and dropping it
            if len(self._loads) >= self.max_entries:
                self._loads.pop(next(iter(self._loads)), None)
            self._loads[raw] = loaded
        return _copied(loaded)


def _copied(value: Any) -> Any:
    """A copy of a load's dicts and lists (their leaves, strings and numbers, are immutable): a third of what
    copy.deepcopy costs for a pop body, which keeps a memo for cycles that JSON cannot have. Kept bodies nest at
    most request_json.MAX_BODY_DEPTH levels."""
    if isinstance(value, dict):
        return {key: _copied(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_copied(item) for item in value]
    return value
