"""Validate response shapes against OpenAI's published OpenAPI spec (shared/reference)."""

from __future__ import annotations

import functools
import os
from pathlib import Path

import jsonschema
import yaml
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

SPEC_CANDIDATES = [
    os.environ.get("HORDE_OPENAI_SPEC", ""),
    str(Path(__file__).resolve().parents[3] / "shared" / "reference" / "openai-openapi.yaml"),
]
SPEC_URI = "urn:openai-openapi"


def spec_path() -> Path | None:
    return next((Path(c) for c in SPEC_CANDIDATES if c and Path(c).is_file()), None)


@functools.lru_cache(maxsize=1)
def _registry():
    path = spec_path()
    if path is None:
        return None
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    with open(path, encoding="utf-8") as handle:
        document = yaml.load(handle, Loader=loader)
    document = _nullable_to_json_schema(document)
    return Registry().with_resource(SPEC_URI, Resource.from_contents(document, default_specification=DRAFT202012))


def _nullable_to_json_schema(node):
    """OpenAPI 3.0's `nullable: true` (still used in the spec) becomes a JSON Schema null alternative."""
    if isinstance(node, list):
        return [_nullable_to_json_schema(item) for item in node]
    if not isinstance(node, dict):
        return node
    node = {key: _nullable_to_json_schema(value) for key, value in node.items()}
    if node.pop("nullable", False) is True:
        kind = node.get("type")
        if isinstance(kind, str):
            node["type"] = [kind, "null"]
            if "enum" in node and None not in node["enum"]:
                node["enum"] = list(node["enum"]) + [None]
        elif isinstance(kind, list):
            node["type"] = kind + ["null"] if "null" not in kind else kind
        else:
            return {"anyOf": [node, {"type": "null"}]}
    return node


@functools.lru_cache(maxsize=8)
def _validator(schema_name: str):
    registry = _registry()
    if registry is None:
        return None
    schema = {"$ref": f"{SPEC_URI}#/components/schemas/{schema_name}"}
    return jsonschema.Draft202012Validator(schema, registry=registry)


def validate(instance: dict, schema_name: str) -> None:
    """Raise jsonschema.ValidationError when `instance` breaks OpenAI's schema; skip without the spec."""
    validator = _validator(schema_name)
    if validator is None:
        import pytest

        pytest.skip("OpenAI's OpenAPI spec is not available (set HORDE_OPENAI_SPEC)")
    validator.validate(instance)
