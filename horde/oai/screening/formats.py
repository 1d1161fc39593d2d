"""Screening of response_format: text (dropped), json_object and json_schema.

Unknown keys inside response_format and response_format.json_schema are
refused at their path, as OpenAI refuses them. The schema is required, and it is
checked for depth, and for OpenAI's strict rules when strict is true.
"""

from __future__ import annotations

from typing import Any

from horde.oai.screening.base import (
    UNSUPPORTED,
    invalid_choice,
    missing,
    require_object,
    require_string,
    unknown_parameter,
)
from horde.oai.screening.fields import (
    FixedSchema,
    FunctionName,
    JsonObject,
    StrictBool,
    StrictString,
    load_fixed_object,
)
from horde.oai.screening.json_schemas import check_schema

RESPONSE_FORMAT_KEYS = {
    "text": ("type",),
    "json_object": ("type",),
    "json_schema": ("type", "json_schema"),
}
RESPONSE_FORMAT_TYPES = tuple(RESPONSE_FORMAT_KEYS)


class JsonSchemaFormatSchema(FixedSchema):
    """response_format.json_schema: unknown keys refused."""

    name = FunctionName(required=True, allow_none=False)
    schema = JsonObject(required=True, allow_none=False)
    description = StrictString()
    strict = StrictBool()


_JSON_SCHEMA_FORMAT = JsonSchemaFormatSchema()  # reused: loading keeps no state on the schema


def screen_response_format(value: Any) -> dict | None:
    """The native response_format, or None for {"type": "text"}."""
    response_format = require_object(value, "response_format")
    if "type" not in response_format:
        raise missing("response_format.type")
    kind = require_string(response_format["type"], "response_format.type")
    if kind not in RESPONSE_FORMAT_KEYS:
        raise invalid_choice("response_format.type", kind, RESPONSE_FORMAT_TYPES, code=UNSUPPORTED)
    for key in response_format:
        if key not in RESPONSE_FORMAT_KEYS[kind]:
            raise unknown_parameter(f"response_format.{key}")
    if kind == "text":
        return None
    if kind == "json_object":
        return {"type": "json_object"}
    return {"type": "json_schema", "json_schema": _screen_json_schema(response_format)}


def _screen_json_schema(response_format: dict) -> dict:
    path = "response_format.json_schema"
    if "json_schema" not in response_format:
        raise missing(path)
    json_schema = load_fixed_object(_JSON_SCHEMA_FORMAT, require_object(response_format["json_schema"], path), path)
    check_schema(
        json_schema["schema"],
        strict=json_schema.get("strict") is True,
        owner=f"response_format '{json_schema['name']}'",
        param="response_format",
    )
    return json_schema
