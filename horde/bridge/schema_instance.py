"""A JSON value that validates against a JSON schema: the scripted worker's structured output.

Used for `json: "auto"` replies (the content follows the request's json_schema) and
for `tool_calls: "auto"` (the arguments follow the tool's parameters schema), so the
scripted worker's replies pass the Horde's conformance check. The value is the
simplest one that validates: required keys only, the first enum value, the lower
bounds of numbers and lengths, the first workable branch of anyOf/oneOf.
"""

from __future__ import annotations

import copy
import math
import re
from typing import Any

from horde.bridge.regex_sample import sample as sample_pattern

MAX_DEPTH = 32
ONEOF_VARIANTS = 4
DEFAULT_STRING = "example"
STRING_FORMATS = {
    "date-time": "2024-01-01T00:00:00Z",
    "date": "2024-01-01",
    "time": "00:00:00Z",
    "email": "user@example.com",
    "idn-email": "user@example.com",
    "hostname": "example.com",
    "uri": "https://example.com/",
    "iri": "https://example.com/",
    "url": "https://example.com/",
    "uri-reference": "https://example.com/",
    "uuid": "00000000-0000-4000-8000-000000000000",
    "ipv4": "127.0.0.1",
    "ipv6": "::1",
    "duration": "P1D",
    "regex": ".*",
}
_OBJECT_KEYS = ("properties", "required", "additionalProperties", "minProperties", "patternProperties")
_ARRAY_KEYS = ("items", "prefixItems", "minItems", "maxItems", "contains")
_STRING_KEYS = ("minLength", "maxLength", "pattern", "format")
_NUMBER_KEYS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")
_LOWER_BOUNDS = ("minimum", "minLength", "minItems", "minProperties")
_UPPER_BOUNDS = ("maximum", "maxLength", "maxItems", "maxProperties")


def instance_for(schema: Any, root: Any = None) -> Any:
    """The simplest value `schema` accepts; `$ref`s resolve against `root` (default: schema)."""
    return _Generator(schema if root is None else root).make(schema, 0, 0)


class _Generator:
    def __init__(self, root: Any):
        self.root = root

    def make(self, schema: Any, depth: int, variant: int) -> Any:
        if not isinstance(schema, dict) or depth > MAX_DEPTH:
            return None
        schema = self._expand(schema)
        if "const" in schema:
            return copy.deepcopy(schema["const"])
        if isinstance(schema.get("enum"), list) and schema["enum"]:
            return copy.deepcopy(schema["enum"][variant % len(schema["enum"])])
        for key in ("anyOf", "oneOf"):
            if isinstance(schema.get(key), list) and schema[key]:
                return self._branch(schema, key, depth, variant)
        kind = _pick_type(schema)
        if kind == "object":
            return self._object(schema, depth)
        if kind == "array":
            return self._array(schema, depth)
        if kind == "string":
            return _string(schema, variant)
        if kind in ("integer", "number"):
            return _number(schema, kind == "integer", variant)
        if kind == "boolean":
            return bool(variant % 2)
        return None

    def _expand(self, schema: dict) -> dict:
        """Inline `$ref` and fold `allOf`, so one dict carries every constraint."""
        for _ in range(MAX_DEPTH):
            if "$ref" in schema:
                rest = {k: v for k, v in schema.items() if k != "$ref"}
                schema = _merge(self._resolve(schema["$ref"]), rest)
            elif isinstance(schema.get("allOf"), list):
                merged = {k: v for k, v in schema.items() if k != "allOf"}
                for part in schema["allOf"]:
                    if isinstance(part, dict):
                        merged = _merge(merged, part)
                schema = merged
            else:
                return schema
        return schema

    def _resolve(self, ref: str) -> dict:
        if not ref.startswith("#"):
            return {}
        node: Any = self.root
        for token in [t for t in ref[1:].split("/") if t]:
            token = token.replace("~1", "/").replace("~0", "~")
            node = node[int(token)] if isinstance(node, list) else (node or {}).get(token)
        return node if isinstance(node, dict) else {}

    def _branch(self, schema: dict, key: str, depth: int, variant: int) -> Any:
        """The first branch whose value validates the whole schema (oneOf: exactly one branch).

        For oneOf the simplest value of a branch often fits another branch too (0 is
        both a number and an integer), so a few variants of each branch are tried.
        """
        base = {k: v for k, v in schema.items() if k != key}
        offsets = range(ONEOF_VARIANTS) if key == "oneOf" else range(1)
        first, found = None, False
        for branch in schema[key]:
            sub = _merge(base, branch) if isinstance(branch, dict) else base
            for offset in offsets:
                value = self.make(sub, depth + 1, variant + offset)
                if not found:
                    first, found = value, True
                if self.valid(value, schema):
                    return value
        return first

    def valid(self, value: Any, schema: dict) -> bool:
        try:
            import jsonschema
        except ImportError:  # pragma: no cover - the check is a refinement only
            return True
        root = self.root if isinstance(self.root, dict) else {}
        probe = dict(schema)
        for defs in ("$defs", "definitions"):
            if defs in root and defs not in probe:
                probe[defs] = root[defs]
        try:
            return jsonschema.validators.validator_for(root)(probe).is_valid(value)
        except Exception:
            return True

    def _object(self, schema: dict, depth: int) -> dict:
        properties = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        extra = extra if isinstance(extra, dict) else {}
        out: dict = {}
        wanted = list(schema.get("required") or [])
        minimum = int(schema.get("minProperties") or 0)
        wanted += [k for k in properties if k not in wanted][: max(0, minimum - len(wanted))]
        while wanted:
            key = wanted.pop(0)
            if key in out:
                continue
            out[key] = self.make(properties.get(key, extra), depth + 1, 0)
            wanted += [k for k in (schema.get("dependentRequired") or {}).get(key, []) if k not in out]
        while len(out) < minimum:
            out[f"key{len(out)}"] = self.make(extra, depth + 1, 0)
        return out

    def _array(self, schema: dict, depth: int) -> list:
        items = schema.get("items")
        prefix = schema.get("prefixItems") or (items if isinstance(items, list) else [])
        item_schema = items if isinstance(items, dict) else (schema.get("additionalItems") or {})
        minimum = int(schema.get("minItems") or 0)
        out = [self.make(s, depth + 1, 0) for s in prefix[: max(minimum, 0)]] if prefix else []
        contains = schema.get("contains")
        if isinstance(contains, dict):
            for _ in range(int(schema.get("minContains", 1))):
                out.append(self.make(contains, depth + 1, len(out)))
        while len(out) < minimum:
            source = prefix[len(out)] if len(out) < len(prefix) else item_schema
            out.append(self.make(source if isinstance(source, dict) else {}, depth + 1, len(out)))
        return out


def _pick_type(schema: dict) -> str | None:
    kind = schema.get("type")
    if isinstance(kind, list):
        useful = [k for k in kind if k != "null"]
        return useful[0] if useful else ("null" if kind else None)
    if isinstance(kind, str):
        return kind
    for keys, name in (
        (_OBJECT_KEYS, "object"),
        (_ARRAY_KEYS, "array"),
        (_STRING_KEYS, "string"),
        (_NUMBER_KEYS, "number"),
    ):
        if any(k in schema for k in keys):
            return name
    return None


def _merge(a: dict, b: dict) -> dict:
    """Both schemas' constraints in one dict (for allOf and $ref siblings)."""
    out = dict(a)
    for key, value in b.items():
        if key not in out:
            out[key] = value
        elif key == "properties" and isinstance(value, dict):
            props = dict(out[key])
            for name, sub in value.items():
                props[name] = {"allOf": [props[name], sub]} if name in props else sub
            out[key] = props
        elif key == "required" and isinstance(value, list):
            out[key] = list(dict.fromkeys([*out[key], *value]))
        elif key in _LOWER_BOUNDS and _is_number(value) and _is_number(out[key]):
            out[key] = max(out[key], value)
        elif key in _UPPER_BOUNDS and _is_number(value) and _is_number(out[key]):
            out[key] = min(out[key], value)
        elif key == "type":
            left = out[key] if isinstance(out[key], list) else [out[key]]
            right = value if isinstance(value, list) else [value]
            common = [t for t in left if t in right or (t == "integer" and "number" in right)]
            common += [t for t in right if t == "integer" and "number" in left and t not in common]
            out[key] = common or value
        elif key in ("anyOf", "oneOf", "allOf"):
            out["allOf"] = [*out.get("allOf", []), {key: value}] if key != "allOf" else [*out[key], *value]
        else:
            out[key] = value
    return out


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _fit_length(text: str, schema: dict) -> str:
    minimum, maximum = int(schema.get("minLength") or 0), schema.get("maxLength")
    if len(text) < minimum:
        text += "x" * (minimum - len(text))
    if maximum is not None and len(text) > int(maximum):
        text = text[: int(maximum)]
    return text


def _string(schema: dict, variant: int) -> str:
    base = STRING_FORMATS.get(str(schema.get("format")), DEFAULT_STRING)
    if variant:
        base = f"{base}{variant}" if schema.get("format") not in STRING_FORMATS else base
    pattern = schema.get("pattern")
    if not pattern:
        return _fit_length(base, schema)
    for candidate in (base, sample_pattern(pattern)):
        if candidate is not None:
            fitted = _fit_length(candidate, schema)
            try:
                if re.search(pattern, fitted):
                    return fitted
            except re.error:  # a pattern Python cannot read: nothing to check against
                return fitted
    return _fit_length(base, schema)


def _number(schema: dict, integer: bool, variant: int) -> int | float:
    low, high = schema.get("minimum"), schema.get("maximum")
    xlow, xhigh = schema.get("exclusiveMinimum"), schema.get("exclusiveMaximum")
    if xlow is True:  # draft 4: a flag on minimum
        xlow, low = low, None
    if xhigh is True:
        xhigh, high = high, None
    xlow = xlow if _is_number(xlow) else None
    xhigh = xhigh if _is_number(xhigh) else None
    step = schema.get("multipleOf") if _is_number(schema.get("multipleOf")) else None

    def fits(v: float) -> bool:
        if (low is not None and v < low) or (high is not None and v > high):
            return False
        if (xlow is not None and v <= xlow) or (xhigh is not None and v >= xhigh):
            return False
        if integer and v != int(v):
            return False
        return step is None or abs(v / step - round(v / step)) < 1e-9

    floor = low if low is not None else (xlow if xlow is not None else None)
    ceiling = high if high is not None else xhigh
    candidates: list[float] = []
    if variant:  # distinct values for uniqueItems and oneOf: ±1, ±2 … (±0.5, ±1.5 … for numbers)
        sign, size = (1 if variant % 2 else -1), (variant + 1) // 2
        candidates.append(sign * size if integer else sign * (size - 0.5))
        candidates += [
            v
            for v in (
                floor + variant if floor is not None else None,
                ceiling - variant if ceiling is not None else None,
            )
            if v is not None
        ]
    candidates += [0, 1, -1]
    if floor is not None:
        candidates += [floor, math.floor(floor) + 1, math.ceil(floor)]
        if step:
            candidates += [math.ceil(floor / step) * step, (math.floor(floor / step) + 1) * step]
    if ceiling is not None:
        candidates += [ceiling, math.ceil(ceiling) - 1, math.floor(ceiling)]
        if floor is not None:
            candidates.append((floor + ceiling) / 2)
    for value in candidates:
        if fits(value):
            return int(value) if value == int(value) else value
    return int(floor or 0) if integer else (floor or 0)
