"""The native API's Swagger bodies, written from the marshmallow schemas: one schema per payload, no copy.

`body_model` turns a schema into a flask-restx schema model (a Swagger 2.0 definition) that a route names
in `expect` or `response`. The conversion only documents: nothing here runs when a request is served.
Swagger 2.0 has no null type, so a field that allows None is marked `x-nullable` (as its tools read it).
A custom field says what it holds with a `json_schema` class attribute.
"""

from __future__ import annotations

from typing import Any

from flask_restx import Namespace
from flask_restx.model import SchemaModel
from marshmallow import RAISE, Schema, fields, validate

JsonSchema = dict[str, Any]

#: The JSON type of each marshmallow field class; a subclass takes its nearest listed base's.
FIELD_TYPES: tuple[tuple[type[fields.Field], JsonSchema], ...] = (
    (fields.Boolean, {"type": "boolean"}),
    (fields.Integer, {"type": "integer"}),
    (fields.Float, {"type": "number"}),
    (fields.String, {"type": "string"}),
    (fields.Dict, {"type": "object"}),
)


def body_model(namespace: Namespace, name: str, schema: Schema | type[Schema]) -> SchemaModel:
    """The Swagger definition `name` of `schema`, registered on `namespace`."""
    return namespace.schema_model(name, schema_definition(schema))


def schema_definition(schema: Schema | type[Schema]) -> JsonSchema:
    """`schema` as a JSON schema object: its fields, the required ones, and whether others are refused."""
    instance = schema() if isinstance(schema, type) else schema
    properties = {field.data_key or name: field_definition(field) for name, field in instance.fields.items()}
    definition: JsonSchema = {"type": "object", "properties": properties}
    required = [field.data_key or name for name, field in instance.fields.items() if field.required]
    if required:
        definition["required"] = required
    if instance.unknown == RAISE:
        definition["additionalProperties"] = False
    description = (type(instance).__doc__ or "").strip()
    if description:
        definition["description"] = description
    return definition


def field_definition(field: fields.Field) -> JsonSchema:
    definition = _shape(field)
    for validator in field.validators:
        definition.update(_limits(validator, definition.get("type")))
    if field.allow_none:
        definition["x-nullable"] = True
    default = field.load_default
    if default is not None and not callable(default) and default is not fields.missing_:
        definition["default"] = default
    if field.metadata.get("description"):
        definition["description"] = field.metadata["description"]
    return definition


def _shape(field: fields.Field) -> JsonSchema:
    custom = getattr(field, "json_schema", None)
    if custom is not None:
        return dict(custom)
    if isinstance(field, fields.Nested):
        nested = schema_definition(field.schema)
        return {"type": "array", "items": nested} if field.many else nested
    if isinstance(field, fields.List):
        return {"type": "array", "items": field_definition(field.inner)}
    if isinstance(field, fields.Dict) and field.value_field is not None:
        return {"type": "object", "additionalProperties": field_definition(field.value_field)}
    for field_class, shape in FIELD_TYPES:
        if isinstance(field, field_class):
            return dict(shape)
    return {}  # fields.Raw: any JSON value


def _limits(validator: Any, kind: str | None) -> JsonSchema:
    """A validator's bounds in JSON schema words: lengths of strings or arrays, ranges, choices."""
    if isinstance(validator, validate.Length):
        prefix = {"string": "Length", "array": "Items", "object": "Properties"}.get(kind or "", "Length")
        bounds = {f"min{prefix}": validator.min, f"max{prefix}": validator.max}
        if validator.equal is not None:
            bounds = {f"min{prefix}": validator.equal, f"max{prefix}": validator.equal}
        return {key: value for key, value in bounds.items() if value is not None}
    if isinstance(validator, validate.Range):
        limits: JsonSchema = {}
        if validator.min is not None:
            limits["minimum"] = validator.min
            if not validator.min_inclusive:
                limits["exclusiveMinimum"] = True
        if validator.max is not None:
            limits["maximum"] = validator.max
            if not validator.max_inclusive:
                limits["exclusiveMaximum"] = True
        return limits
    if isinstance(validator, validate.OneOf):
        return {"enum": list(validator.choices)}
    if isinstance(validator, validate.Equal):
        return {"enum": [validator.comparable]}
    return {}
