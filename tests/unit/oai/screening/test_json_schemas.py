"""Strict-schema rules and the depth limit of a schema (horde/oai/screening/json_schemas.py)."""

from __future__ import annotations

import pytest

from horde.oai.screening.json_schemas import MAX_SCHEMA_DEPTH
from tests.support import screening as shapes

# --- Strict schemas ------------------------------------------------------------------------------------


def organizations_schema():
    return {
        "type": "object",
        "additionalProperties": False,
        "required": ["organizations"],
        "properties": {
            "organizations": {
                "type": "array",
                "items": {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["name"],
                    "properties": {"name": {"type": "string"}, "roles": {"type": "array"}},
                },
            }
        },
    }


def with_defs(key):
    return {
        "type": "object",
        "additionalProperties": False,
        "required": ["p"],
        "properties": {"p": {"$ref": f"#/{key}/P"}},
        key: {"P": {"type": "object", "properties": {}}},
    }


@pytest.mark.parametrize(
    "schema,detail",
    [
        (
            {"type": "object", "properties": {}},
            "In context=(), 'additionalProperties' is required to be supplied and to be false.",
        ),
        (
            {"type": "object", "properties": {}, "additionalProperties": True},
            "In context=(), 'additionalProperties' is required to be supplied and to be false.",
        ),
        (
            {"type": "object", "properties": {}, "additionalProperties": 0},
            "In context=(), 'additionalProperties' is required to be supplied and to be false.",
        ),
        (
            organizations_schema(),
            "In context=('properties', 'organizations', 'items'), 'required' is "
            "required to be supplied and to be an array including every key in properties. Missing 'roles'.",
        ),
        (
            {"type": "object", "additionalProperties": False, "properties": {"a": {"type": "string"}}},
            "In context=(), 'required' is required to be supplied and to be an array including every key "
            "in properties. Missing 'a'.",
        ),
        (
            {
                "type": "object",
                "additionalProperties": False,
                "required": ["a"],
                "properties": {"a": {"anyOf": [{"type": "string"}, {"type": "object", "properties": {}}]}},
            },
            "In context=('properties', 'a', 'anyOf', 1), 'additionalProperties' is required to be "
            "supplied and to be false.",
        ),
        (
            with_defs("$defs"),
            "In context=('$defs', 'P'), 'additionalProperties' is required to be supplied and to be false.",
        ),
        (
            with_defs("definitions"),
            "In context=('definitions', 'P'), 'additionalProperties' is required to be supplied and to be false.",
        ),
        (
            {"type": "array", "items": {"type": "string"}},
            "schema must be a JSON Schema of 'type: \"object\"', got 'type: \"array\"'.",
        ),
        ({"anyOf": [{"type": "object"}]}, "schema must be a JSON Schema of 'type: \"object\"', got 'type: \"None\"'."),
    ],
)
def test_strict_schema_rules(schema, detail):
    response_format = shapes.json_schema_format(schema, name="NAME", strict=True)
    shapes.assert_refused(
        shapes.make_body(response_format=response_format),
        shapes.UNSUPPORTED,
        "response_format",
        f"Invalid schema for response_format 'NAME': {detail}",
    )
    tool = shapes.function_tool("NAME", parameters=schema, strict=True)
    shapes.assert_refused(
        shapes.make_body(tools=[shapes.WEATHER_TOOL, tool]),
        shapes.UNSUPPORTED,
        "tools[1].function.parameters",
        f"Invalid schema for function 'NAME': {detail}",
    )


@pytest.mark.parametrize("strict", [False, None])
def test_non_strict_schemas_need_not_follow_the_strict_rules(strict):
    schema = organizations_schema()
    assert shapes.screen(shapes.make_body(response_format=shapes.json_schema_format(schema, strict=strict)))
    assert shapes.screen(shapes.make_body(tools=[shapes.function_tool(parameters=schema, strict=strict)]))


def test_a_strict_schema_following_the_rules_is_accepted():
    assert shapes.screen(shapes.make_body(response_format=shapes.json_schema_format(shapes.STRICT_OK, strict=True)))
    assert shapes.screen(shapes.make_body(tools=[shapes.function_tool(parameters=shapes.STRICT_OK, strict=True)]))


# --- Schema depth and payload size -------------------------------------------------------------------


@pytest.mark.parametrize("strict", [False, True])
def test_schema_depth_limit_for_response_format(strict):
    ok = shapes.nested_properties_schema(MAX_SCHEMA_DEPTH // 2, strict_ready=True)
    ok = {"type": "object", "additionalProperties": False, "required": ["a"], "properties": {"a": ok}}
    assert shapes.screen(shapes.make_body(response_format=shapes.json_schema_format(ok, strict=strict)))
    deep = shapes.nested_properties_schema(11, strict_ready=True)
    error = shapes.assert_refused(
        shapes.make_body(response_format=shapes.json_schema_format(deep, strict=strict)),
        shapes.UNSUPPORTED,
        "response_format",
    )
    assert error.message.startswith("Invalid schema for response_format 'answer': ")
    assert "at most 10" in error.message


@pytest.mark.parametrize("levels,accepted", [(9, True), (10, True), (11, False), (40, False)])
def test_schema_depth_limit_for_tool_parameters(levels, accepted):
    # The innermost {"type": "string"} sits ``levels`` subschema steps below the root.
    schema = shapes.nested_properties_schema(levels)
    body = shapes.make_body(tools=[shapes.function_tool(parameters=schema)])
    if accepted:
        assert shapes.screen(body).native["tools"][0]["function"]["parameters"] == schema
    else:
        error = shapes.assert_refused(body, shapes.UNSUPPORTED, "tools[0].function.parameters")
        assert error.message.startswith("Invalid schema for function 'get_weather': ")


@pytest.mark.parametrize(
    "step",
    [
        lambda inner: {"type": "array", "items": inner},
        lambda inner: {"anyOf": [{"type": "null"}, inner]},
        lambda inner: {"type": "object", "additionalProperties": inner},
        lambda inner: {"$defs": {"d": inner}},
    ],
)
def test_every_subschema_keyword_counts_as_a_level(step):
    schema = {"type": "string"}
    for _ in range(MAX_SCHEMA_DEPTH):
        schema = step(schema)
    assert shapes.screen(shapes.make_body(tools=[shapes.function_tool(parameters=schema)]))
    shapes.assert_refused(
        shapes.make_body(tools=[shapes.function_tool(parameters=step(schema))]),
        shapes.UNSUPPORTED,
        "tools[0].function.parameters",
    )


def test_non_schema_values_do_not_count_as_levels():
    deep_default = [[[[[[[[[[[[["x"]]]]]]]]]]]]]
    schema = {"type": "object", "properties": {"a": {"type": "array", "default": deep_default, "enum": [deep_default]}}}
    assert shapes.screen(shapes.make_body(tools=[shapes.function_tool(parameters=schema)]))


def test_a_very_deep_schema_is_refused_not_crashed():
    schema = shapes.nested_properties_schema(400)
    shapes.assert_refused(
        shapes.make_body(tools=[shapes.function_tool(parameters=schema)]),
        shapes.UNSUPPORTED,
        "tools[0].function.parameters",
    )
    shapes.assert_refused(
        shapes.make_body(response_format=shapes.json_schema_format(schema, strict=True)),
        shapes.UNSUPPORTED,
        "response_format",
    )
