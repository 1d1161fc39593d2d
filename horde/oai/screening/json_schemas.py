"""Structural checks on client JSON Schemas (response_format and tool parameters).

Every schema, strict or not, may nest at most MAX_SCHEMA_DEPTH subschema levels
below its root: one level per step through properties, items, anyOf, $defs and
the other subschema keywords (a keyword's own map or array is not a level).
With strict: true the schema also follows OpenAI's Structured Outputs rules:
the root is an object schema, and every object schema sets
"additionalProperties": false and lists all its properties in required.
Refusals carry OpenAI's message, ``In context=(...)`` included. The walk uses an
explicit stack, so no input can exhaust Python's recursion limit.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from horde.oai.screening.base import UNSUPPORTED, ScreeningError, same_json_value

MAX_SCHEMA_DEPTH = 10

_SCHEMA_MAP_KEYWORDS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_SCHEMA_LIST_KEYWORDS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SCHEMA_ONE_KEYWORDS = (
    "items",
    "additionalProperties",
    "not",
    "if",
    "then",
    "else",
    "contains",
    "propertyNames",
    "additionalItems",
    "unevaluatedItems",
    "unevaluatedProperties",
)

Context = tuple


def check_schema(schema: dict, *, strict: bool, owner: str, param: str) -> None:
    """Refuse a schema too deep, or breaking the strict rules when ``strict``.

    ``owner`` names the schema in messages (``response_format 'NAME'`` or
    ``function 'NAME'``); ``param`` is the param of the refusal.
    """
    for context, _node, depth in walk_schema(schema):
        if depth > MAX_SCHEMA_DEPTH:
            raise _refusal(
                owner,
                param,
                f"In context={context!r}, the schema is nested {depth} levels below "
                f"its root, where the AI Horde accepts at most {MAX_SCHEMA_DEPTH}.",
            )
    if strict:
        _check_strict(schema, owner, param)


def walk_schema(root: dict) -> Iterator[tuple[Context, dict, int]]:
    """Yield (context, subschema, depth) for every object subschema, in document order."""
    stack: list[tuple[Context, Any, int]] = [((), root, 0)]
    while stack:
        context, node, depth = stack.pop()
        if not isinstance(node, dict):
            continue
        yield context, node, depth
        children = list(_children(node, context, depth + 1))
        stack.extend(reversed(children))


def _children(node: dict, context: Context, depth: int) -> Iterator[tuple[Context, Any, int]]:
    for keyword, value in node.items():
        if keyword in _SCHEMA_MAP_KEYWORDS and isinstance(value, dict):
            for name, child in value.items():
                yield context + (keyword, name), child, depth
        elif keyword in _SCHEMA_LIST_KEYWORDS and isinstance(value, list):
            for index, child in enumerate(value):
                yield context + (keyword, index), child, depth
        elif keyword in _SCHEMA_ONE_KEYWORDS:
            if isinstance(value, list) and keyword == "items":
                for index, child in enumerate(value):
                    yield context + (keyword, index), child, depth
            else:
                yield context + (keyword,), value, depth


def _check_strict(root: dict, owner: str, param: str) -> None:
    if not _declares_object(root):
        got = root.get("type")
        raise _refusal(owner, param, f"schema must be a JSON Schema of 'type: \"object\"', got 'type: \"{got}\"'.")
    for context, node, _depth in walk_schema(root):
        if _is_object_schema(node):
            _check_strict_object(node, context, owner, param)


def _check_strict_object(node: dict, context: Context, owner: str, param: str) -> None:
    if not same_json_value(node.get("additionalProperties"), False):
        raise _refusal(
            owner, param, f"In context={context!r}, 'additionalProperties' is required to be supplied and to be false."
        )
    properties = node.get("properties")
    if not isinstance(properties, dict):
        return
    required = node.get("required")
    listed = {item for item in required if isinstance(item, str)} if isinstance(required, list) else set()
    for name in properties:
        if name not in listed:
            raise _refusal(
                owner,
                param,
                f"In context={context!r}, 'required' is required to be supplied and "
                "to be an array including every key in properties. "
                f"Missing '{name}'.",
            )


def _declares_object(node: dict) -> bool:
    kind = node.get("type")
    return kind == "object" or (isinstance(kind, list) and "object" in kind)


def _is_object_schema(node: dict) -> bool:
    return _declares_object(node) or ("type" not in node and "properties" in node)


def _refusal(owner: str, param: str, detail: str) -> ScreeningError:
    return ScreeningError(f"Invalid schema for {owner}: {detail}", code=UNSUPPORTED, param=param)
