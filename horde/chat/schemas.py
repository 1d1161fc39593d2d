"""The native chat request's payload: its marshmallow schema.

The OpenAI front screens its own body (horde/oai/screening/) and hands the result to the same
`ChatRequestSchema` that the native async route uses. The worker protocol's payloads are in
horde/workers/schemas.py; both are loaded with horde/payload.py.
"""

from __future__ import annotations

from marshmallow import RAISE, Schema, ValidationError, fields, post_load, validate, validates_schema

from horde.contract import (
    AVAILABILITY_MODES,
    CONFORMANCE_MODES,
    CONTEXT_FITTING_MODES,
    DEFAULT_AVAILABILITY_MODE,
    DEFAULT_CONFORMANCE,
    DEFAULT_CONTEXT_FITTING,
    MAX_MODELS_PER_REQUEST,
    MAX_STOP_SEQUENCES,
    MESSAGE_ROLES,
    MODEL_NAME_MAX_CHARS,
    REASONING_EFFORTS,
    SAMPLING_RANGES,
    TOKEN_CEILING,
    TOKEN_FLOOR,
)
from horde.cooperative import pause_every


class ObjectList(fields.Field):
    """A list of JSON objects, checked in one pass (a List of Dict fields costs a field call per item)."""

    default_error_messages = {"invalid": "Not a valid list."}

    def _deserialize(self, value, attr, data, **kwargs):
        if not isinstance(value, list):
            raise self.make_error("invalid")
        for index, item in enumerate(pause_every(value)):
            if not isinstance(item, dict):
                raise ValidationError({index: ["Not a valid mapping type."]})
        return list(value)


class ChatRequestSchema(Schema):
    class Meta:
        unknown = RAISE

    model = fields.String(validate=validate.Length(min=1, max=MODEL_NAME_MAX_CHARS))
    models = fields.List(
        fields.String(validate=validate.Length(min=1, max=MODEL_NAME_MAX_CHARS)),
        validate=validate.Length(min=1, max=MAX_MODELS_PER_REQUEST),
    )
    messages = ObjectList(required=True, validate=validate.Length(min=1))
    tools = fields.List(fields.Dict())
    tool_choice = fields.Raw()
    parallel_tool_calls = fields.Boolean()
    response_format = fields.Dict()
    max_tokens = fields.Integer(strict=True, validate=validate.Range(min=TOKEN_FLOOR, max=TOKEN_CEILING))
    temperature = fields.Float(validate=validate.Range(*SAMPLING_RANGES["temperature"]))
    top_p = fields.Float(validate=validate.Range(*SAMPLING_RANGES["top_p"]))
    frequency_penalty = fields.Float(validate=validate.Range(*SAMPLING_RANGES["frequency_penalty"]))
    presence_penalty = fields.Float(validate=validate.Range(*SAMPLING_RANGES["presence_penalty"]))
    seed = fields.Integer(strict=True)
    stop = fields.List(fields.String(), validate=validate.Length(min=1, max=MAX_STOP_SEQUENCES))
    reasoning_effort = fields.String(validate=validate.OneOf(REASONING_EFFORTS))
    only = fields.List(fields.String(), validate=validate.Length(min=1))  # type: ignore[assignment]  # a field, not Schema.only
    trusted_workers = fields.Boolean(load_default=False)
    context_fitting = fields.String(
        load_default=DEFAULT_CONTEXT_FITTING, validate=validate.OneOf(CONTEXT_FITTING_MODES)
    )
    max_kudos = fields.Integer(strict=True, validate=validate.Range(min=1))
    conformance = fields.String(load_default=DEFAULT_CONFORMANCE, validate=validate.OneOf(CONFORMANCE_MODES))
    availability_mode = fields.String(
        load_default=DEFAULT_AVAILABILITY_MODE, validate=validate.OneOf(AVAILABILITY_MODES)
    )

    @validates_schema
    def _messages(self, data, **_):
        """Roles as OpenAI's; images only in user messages (the front screens the rest in detail)."""
        for index, message in enumerate(pause_every(data.get("messages") or ())):
            if message.get("role") not in MESSAGE_ROLES:
                raise ValidationError(
                    f"Unsupported role {message.get('role')!r}; supported: {', '.join(MESSAGE_ROLES)}.",
                    f"messages[{index}].role",
                )
            content = message.get("content")
            if not isinstance(content, (str, list)) and not (content is None and message["role"] == "assistant"):
                raise ValidationError("Content must be a string or a list of parts.", f"messages[{index}].content")
            for part_index, part in enumerate(content if isinstance(content, list) else ()):
                kind = part.get("type") if isinstance(part, dict) else None
                if kind not in ("text", "image_url") or (kind == "image_url" and message["role"] != "user"):
                    raise ValidationError(
                        f"Unsupported content part {kind!r} in a {message['role']} message.",
                        f"messages[{index}].content[{part_index}].type",
                    )

    @validates_schema
    def _shapes_the_horde_reads(self, data, **_):
        """Only what admission and the submit check read: tools' names, a forced function, a json_schema object."""
        for index, tool in enumerate(data.get("tools") or ()):
            if "function" in tool and not (
                isinstance(tool["function"], dict) and isinstance(tool["function"].get("name"), str)
            ):
                raise ValidationError(
                    "A tool's 'function' must be an object with a string 'name'.", f"tools[{index}].function"
                )
        choice = data.get("tool_choice")
        if isinstance(choice, dict) and not isinstance(choice.get("function", {}), dict):
            raise ValidationError("A forced tool_choice's 'function' must be an object.", "tool_choice.function")
        response_format = data.get("response_format")
        if response_format is not None and not isinstance(response_format.get("json_schema", {}), dict):
            raise ValidationError("'json_schema' must be an object.", "response_format.json_schema")

    @post_load
    def _developer_as_system(self, data, **_):
        data["messages"] = [
            dict(message, role="system") if message.get("role") == "developer" else message
            for message in data["messages"]
        ]
        return data

    @validates_schema
    def _one_model_key(self, data, **_):
        if "model" in data and "models" in data:
            raise ValidationError("Send either 'model' or 'models', not both.", "models")
        if "model" not in data and "models" not in data:
            raise ValidationError("Missing required parameter: 'model'.", "model")


CHAT_REQUEST_SCHEMA = ChatRequestSchema()
