"""Screening of response_format (horde/oai/screening/formats.py)."""

from __future__ import annotations

import pytest

from tests.support.screening import (
    BAD,
    STRICT_OK,
    UNSUPPORTED,
    assert_refused,
    json_schema_format,
    make_body,
    screen,
)


@pytest.mark.parametrize(
    "response_format,code,param,message",
    [
        (None, BAD, "response_format", "Invalid type for 'response_format': expected an object, but got null instead."),
        ("json_object", BAD, "response_format", None),
        ({}, BAD, "response_format.type", "Missing required parameter: 'response_format.type'."),
        ({"type": 1}, BAD, "response_format.type", None),
        ({"type": "grammar", "grammar": "root ::= x"}, UNSUPPORTED, "response_format.type", None),
        ({"type": "regex"}, UNSUPPORTED, "response_format.type", None),
        ({"type": "text", "x": 1}, UNSUPPORTED, "response_format.x", "Unknown parameter: 'response_format.x'."),
        ({"type": "json_object", "schema": {}}, UNSUPPORTED, "response_format.schema", None),
        ({"type": "json_object", "json_schema": {}}, UNSUPPORTED, "response_format.json_schema", None),
        (
            {"type": "json_schema"},
            BAD,
            "response_format.json_schema",
            "Missing required parameter: 'response_format.json_schema'.",
        ),
        ({"type": "json_schema", "json_schema": "x"}, BAD, "response_format.json_schema", None),
        (
            json_schema_format({}, extra_key=1),
            UNSUPPORTED,
            "response_format.json_schema.extra_key",
            "Unknown parameter: 'response_format.json_schema.extra_key'.",
        ),
        (
            {"type": "json_schema", "json_schema": {"schema": {}}},
            BAD,
            "response_format.json_schema.name",
            "Missing required parameter: 'response_format.json_schema.name'.",
        ),
        (
            {"type": "json_schema", "json_schema": {"name": "a"}},
            BAD,
            "response_format.json_schema.schema",
            "Missing required parameter: 'response_format.json_schema.schema'.",
        ),
        (
            json_schema_format({}, name="has space"),
            BAD,
            "response_format.json_schema.name",
            "Invalid 'response_format.json_schema.name': string does not match pattern. Expected a string "
            "that matches the pattern '^[a-zA-Z0-9_-]+$'.",
        ),
        (json_schema_format({}, name="n" * 65), BAD, "response_format.json_schema.name", None),
        (json_schema_format("{}"), BAD, "response_format.json_schema.schema", None),
        (json_schema_format(None), BAD, "response_format.json_schema.schema", None),
        (json_schema_format({}, strict="true"), BAD, "response_format.json_schema.strict", None),
        (json_schema_format({}, description=1), BAD, "response_format.json_schema.description", None),
    ],
)
def test_response_format_refusals(response_format, code, param, message):
    assert_refused(make_body(response_format=response_format), code, param, message)


@pytest.mark.parametrize(
    "response_format,native",
    [
        ({"type": "text"}, None),
        ({"type": "json_object"}, {"type": "json_object"}),
        (json_schema_format({"type": "object"}), json_schema_format({"type": "object"})),
        (
            json_schema_format(STRICT_OK, strict=True, description="The answer"),
            json_schema_format(STRICT_OK, strict=True, description="The answer"),
        ),
        (
            json_schema_format({"type": "array"}, strict=False, description=None),
            json_schema_format({"type": "array"}, strict=False),
        ),
    ],
)
def test_response_format_accepted(response_format, native):
    assert screen(make_body(response_format=response_format)).native.get("response_format") == native
