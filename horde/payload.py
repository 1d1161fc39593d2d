"""Loading a native payload with its marshmallow schema, for every native route and the front's hand-over.

A failure is 400 BadRequest naming the first failing key, so every payload is refused the same way.
"""

from __future__ import annotations

from typing import Any

from marshmallow import Schema, ValidationError
from marshmallow.schema import SCHEMA

from horde import errors


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
