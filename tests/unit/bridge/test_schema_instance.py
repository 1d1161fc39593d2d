"""The schema-satisfying generator: every value it makes validates, and it stays minimal."""

import jsonschema
import pytest

from horde.bridge.regex_sample import sample
from horde.bridge.schema_instance import instance_for

SCHEMAS = {
    "flat strict object": {
        "type": "object",
        "additionalProperties": False,
        "required": ["name", "age", "active"],
        "properties": {"name": {"type": "string"}, "age": {"type": "integer"}, "active": {"type": "boolean"}},
    },
    "nested objects and arrays": {
        "type": "object",
        "required": ["user", "items"],
        "properties": {
            "user": {
                "type": "object",
                "required": ["id", "address"],
                "properties": {
                    "id": {"type": "integer", "minimum": 10},
                    "address": {"type": "object", "required": ["city"], "properties": {"city": {"type": "string"}}},
                },
            },
            "items": {
                "type": "array",
                "minItems": 2,
                "items": {
                    "type": "object",
                    "required": ["sku", "qty"],
                    "properties": {
                        "sku": {"type": "string", "minLength": 3, "maxLength": 5},
                        "qty": {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
                    },
                },
            },
        },
    },
    "enum picks the first": {
        "type": "object",
        "required": ["unit"],
        "properties": {"unit": {"type": "string", "enum": ["celsius", "kelvin"]}},
    },
    "unique enum array": {"type": "array", "minItems": 2, "uniqueItems": True, "items": {"enum": ["a", "b", "c"]}},
    "anyOf with null first": {
        "type": "object",
        "required": ["v"],
        "properties": {"v": {"anyOf": [{"type": "null"}, {"type": "string"}]}},
    },
    "anyOf impossible first branch": {
        "anyOf": [{"type": "string", "minLength": 5, "maxLength": 2}, {"type": "integer", "minimum": 3}]
    },
    "oneOf exclusive": {"oneOf": [{"type": "number", "minimum": 0}, {"type": "integer", "maximum": 10}]},
    "defs and refs": {
        "$defs": {
            "point": {
                "type": "object",
                "required": ["x", "y"],
                "properties": {"x": {"type": "number"}, "y": {"type": "number"}},
            }
        },
        "type": "object",
        "required": ["from", "path"],
        "properties": {
            "from": {"$ref": "#/$defs/point"},
            "path": {"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/point"}},
        },
    },
    "allOf merges": {
        "allOf": [
            {"type": "object", "required": ["a"], "properties": {"a": {"type": "string", "format": "date"}}},
            {"required": ["b"], "properties": {"b": {"type": "integer", "multipleOf": 7, "minimum": 1}}},
        ]
    },
    "tuple via prefixItems": {
        "type": "array",
        "prefixItems": [{"type": "string"}, {"type": "integer"}],
        "minItems": 2,
        "items": False,
    },
    "patterns and formats": {
        "type": "object",
        "required": ["code", "email", "when", "id"],
        "properties": {
            "code": {"type": "string", "pattern": "^[A-Z]{3}-\\d{4}$"},
            "email": {"type": "string", "format": "email"},
            "when": {"type": "string", "format": "date-time"},
            "id": {"type": "string", "format": "uuid"},
        },
    },
    "minProperties with additionalProperties": {
        "type": "object",
        "minProperties": 2,
        "additionalProperties": {"type": "integer", "minimum": 5},
    },
    "nullable type list": {"type": ["null", "string"], "minLength": 2},
    "const": {"type": "object", "required": ["kind"], "properties": {"kind": {"const": "circle"}}},
    "number bounds": {"type": "number", "exclusiveMinimum": 2.5, "exclusiveMaximum": 3},
    "integer multiple above": {"type": "integer", "exclusiveMinimum": 7, "multipleOf": 4},
    "empty schema": {},
    "recursive tree": {
        "$defs": {
            "node": {
                "type": "object",
                "required": ["value"],
                "properties": {
                    "value": {"type": "integer"},
                    "children": {"type": "array", "items": {"$ref": "#/$defs/node"}},
                },
            }
        },
        "$ref": "#/$defs/node",
    },
}


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_generated_value_validates(name):
    schema = SCHEMAS[name]
    jsonschema.validators.validator_for(schema).check_schema(schema)
    value = instance_for(schema)
    jsonschema.validate(value, schema)


def test_only_required_keys_are_filled():
    schema = {"type": "object", "required": ["a"], "properties": {"a": {"type": "string"}, "b": {"type": "string"}}}
    assert instance_for(schema) == {"a": "example"}


def test_type_appropriate_values_and_first_enum():
    value = instance_for(SCHEMAS["flat strict object"])
    assert value == {"name": "example", "age": 0, "active": False}
    assert instance_for(SCHEMAS["enum picks the first"]) == {"unit": "celsius"}


def test_anyof_skips_a_branch_that_cannot_validate():
    assert instance_for(SCHEMAS["anyOf impossible first branch"]) == 3


def test_oneof_value_matches_exactly_one_branch():
    schema = SCHEMAS["oneOf exclusive"]
    value = instance_for(schema)
    matching = [b for b in schema["oneOf"] if jsonschema.Draft202012Validator(b).is_valid(value)]
    assert len(matching) == 1


def test_refs_resolve_against_an_explicit_root():
    root = SCHEMAS["defs and refs"]
    assert instance_for({"$ref": "#/$defs/point"}, root=root) == {"x": 0, "y": 0}


@pytest.mark.parametrize(
    "pattern",
    [
        r"^\d{4}-\d{2}-\d{2}$",
        r"^[a-z0-9_]{3,16}$",
        r"^(red|green)+$",
        r"^[^@\s]+@[^@\s]+\.[a-z]{2,}$",
        r"^\w+(\.\w+)*$",
        r"abc",
    ],
)
def test_regex_sample_matches(pattern):
    import re

    text = sample(pattern)
    assert text is not None and re.search(pattern, text)


def test_regex_sample_gives_up_on_lookaheads():
    assert sample(r"^(?=.*\d).{8,}$") is None
