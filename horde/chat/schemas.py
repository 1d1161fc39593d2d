"""Native chat payloads: one marshmallow schema per payload.

The OpenAI front screens its own body (horde/oai/screening/) and hands the
result to the same `ChatRequestSchema` that the native async route uses.
"""

from __future__ import annotations

from typing import Any

from marshmallow import RAISE, Schema, ValidationError, fields, post_load, validate, validates_schema

from horde import errors
from horde.cooperative import pause_every
from horde.workers.declarations import FEATURES, GUARANTEES

TOKEN_FLOOR = 16
TOKEN_CEILING = 16_384
MAX_MODELS_PER_REQUEST = 5
MAX_STOP_SEQUENCES = 4
REASONING_EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh")
CONTEXT_FITTING_MODES = ("truncate_oldest", "grow", "reject")
CONFORMANCE_MODES = ("strict", "best_effort")
AVAILABILITY_MODES = ("fail_fast", "wait")
FINISH_REASONS = ("stop", "length", "tool_calls")
MESSAGE_ROLES = ("system", "developer", "user", "assistant", "tool")
MAX_WAIT_S = 30
MAX_WORKER_THREADS = 50


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

    model = fields.String(validate=validate.Length(min=1, max=200))
    models = fields.List(fields.String(validate=validate.Length(min=1, max=200)),
                         validate=validate.Length(min=1, max=MAX_MODELS_PER_REQUEST))
    messages = ObjectList(required=True, validate=validate.Length(min=1))
    tools = fields.List(fields.Dict())
    tool_choice = fields.Raw()
    parallel_tool_calls = fields.Boolean()
    response_format = fields.Dict()
    max_tokens = fields.Integer(strict=True, validate=validate.Range(min=TOKEN_FLOOR, max=TOKEN_CEILING))
    temperature = fields.Float(validate=validate.Range(min=0, max=2))
    top_p = fields.Float(validate=validate.Range(min=0, max=1))
    frequency_penalty = fields.Float(validate=validate.Range(min=-2, max=2))
    presence_penalty = fields.Float(validate=validate.Range(min=-2, max=2))
    seed = fields.Integer(strict=True)
    stop = fields.List(fields.String(), validate=validate.Length(min=1, max=MAX_STOP_SEQUENCES))
    reasoning_effort = fields.String(validate=validate.OneOf(REASONING_EFFORTS))
    only = fields.List(fields.String(), validate=validate.Length(min=1))  # type: ignore[assignment]  # a field, not Schema.only
    trusted_workers = fields.Boolean(load_default=False)
    context_fitting = fields.String(load_default="truncate_oldest", validate=validate.OneOf(CONTEXT_FITTING_MODES))
    max_kudos = fields.Integer(strict=True, validate=validate.Range(min=1))
    conformance = fields.String(load_default="strict", validate=validate.OneOf(CONFORMANCE_MODES))
    availability_mode = fields.String(load_default="fail_fast", validate=validate.OneOf(AVAILABILITY_MODES))

    @validates_schema
    def _messages(self, data, **_):
        """Roles as OpenAI's; images only in user messages (the front screens the rest in detail)."""
        for index, message in enumerate(pause_every(data.get("messages") or ())):
            if message.get("role") not in MESSAGE_ROLES:
                raise ValidationError(f"Unsupported role {message.get('role')!r}; supported: "
                                      f"{', '.join(MESSAGE_ROLES)}.", f"messages[{index}].role")
            content = message.get("content")
            if not isinstance(content, (str, list)) and not (content is None and message["role"] == "assistant"):
                raise ValidationError("Content must be a string or a list of parts.", f"messages[{index}].content")
            for part_index, part in enumerate(content if isinstance(content, list) else ()):
                kind = part.get("type") if isinstance(part, dict) else None
                if kind not in ("text", "image_url") or (kind == "image_url" and message["role"] != "user"):
                    raise ValidationError(f"Unsupported content part {kind!r} in a {message['role']} message.",
                                          f"messages[{index}].content[{part_index}].type")

    @validates_schema
    def _shapes_the_horde_reads(self, data, **_):
        """Only what admission and the submit check read: tools' names, a forced function, a json_schema object."""
        for index, tool in enumerate(data.get("tools") or ()):
            if "function" in tool and not (isinstance(tool["function"], dict)
                                           and isinstance(tool["function"].get("name"), str)):
                raise ValidationError("A tool's 'function' must be an object with a string 'name'.",
                                      f"tools[{index}].function")
        choice = data.get("tool_choice")
        if isinstance(choice, dict) and not isinstance(choice.get("function", {}), dict):
            raise ValidationError("A forced tool_choice's 'function' must be an object.", "tool_choice.function")
        response_format = data.get("response_format")
        if response_format is not None and not isinstance(response_format.get("json_schema", {}), dict):
            raise ValidationError("'json_schema' must be an object.", "response_format.json_schema")

    @post_load
    def _developer_as_system(self, data, **_):
        data["messages"] = [dict(message, role="system") if message.get("role") == "developer" else message
                            for message in data["messages"]]
        return data

    @validates_schema
    def _one_model_key(self, data, **_):
        if "model" in data and "models" in data:
            raise ValidationError("Send either 'model' or 'models', not both.", "models")
        if "model" not in data and "models" not in data:
            raise ValidationError("Missing required parameter: 'model'.", "model")


class PopSchema(Schema):
    class Meta:
        unknown = RAISE

    name = fields.String(required=True, validate=validate.Length(min=1, max=100))
    models = fields.List(fields.String(validate=validate.Length(min=1, max=200)), required=True,
                         validate=validate.Length(min=1, max=100))
    max_length = fields.Integer(required=True, strict=True, validate=validate.Range(min=TOKEN_FLOOR, max=TOKEN_CEILING))
    max_context_length = fields.Integer(required=True, strict=True, validate=validate.Range(min=TOKEN_FLOOR * 2))
    threads = fields.Integer(load_default=1, strict=True, validate=validate.Range(min=1, max=MAX_WORKER_THREADS))
    features = fields.List(fields.String(validate=validate.OneOf(FEATURES)), load_default=list)
    guarantees = fields.List(fields.String(validate=validate.OneOf(GUARANTEES)), load_default=list)
    limits = fields.Dict(load_default=dict)
    bridge_agent = fields.String(load_default="unknown:0:unknown", validate=validate.Length(max=300))
    wait = fields.Float(load_default=0, validate=validate.Range(min=0, max=MAX_WAIT_S))

    @validates_schema
    def _known_limits(self, data, **_):
        limits = data.get("limits") or {}
        unknown = set(limits) - {"max_temperature_with_tools"}
        if unknown:
            raise ValidationError(f"Unknown limit '{sorted(unknown)[0]}'.", "limits")
        value = limits.get("max_temperature_with_tools")
        not_a_number = isinstance(value, bool) or not isinstance(value, (int, float))
        if value is not None and (not_a_number or not 0 <= value <= 2):
            raise ValidationError("max_temperature_with_tools must be a number from 0 to 2.", "limits")


class ProgressSchema(Schema):
    class Meta:
        unknown = RAISE

    id = fields.String(required=True)
    content = fields.String(load_default="", allow_none=True)
    reasoning_content = fields.String(load_default="", allow_none=True)


class ToolCallFunctionSchema(Schema):
    class Meta:
        unknown = RAISE

    name = fields.String(required=True)
    arguments = fields.String(required=True)


class ToolCallSchema(Schema):
    class Meta:
        unknown = RAISE

    id = fields.String(required=True, validate=validate.Length(min=1, max=100))
    type = fields.String(load_default="function", validate=validate.Equal("function"))
    function = fields.Nested(ToolCallFunctionSchema, required=True)


class UsageSchema(Schema):
    class Meta:
        unknown = RAISE

    prompt_tokens = fields.Integer(strict=True, validate=validate.Range(min=0))
    completion_tokens = fields.Integer(strict=True, validate=validate.Range(min=0))
    reasoning_tokens = fields.Integer(strict=True, validate=validate.Range(min=0))


class SubmitSchema(Schema):
    class Meta:
        unknown = RAISE

    id = fields.String(required=True)
    content = fields.String(allow_none=True, load_default=None)
    reasoning_content = fields.String(allow_none=True, load_default=None)
    tool_calls = fields.List(fields.Nested(ToolCallSchema), allow_none=True, load_default=None)
    finish_reason = fields.String(load_default="stop", validate=validate.OneOf(FINISH_REASONS))
    usage = fields.Nested(UsageSchema, load_default=dict)


class FaultSchema(Schema):
    class Meta:
        unknown = RAISE

    id = fields.String(required=True)
    reason = fields.String(load_default="The worker reported a fault without a reason.",
                           validate=validate.Length(max=2000))


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
        path = f"{prefix}.{key}" if prefix and not isinstance(key, int) else (
            f"{prefix}[{key}]" if isinstance(key, int) else str(key))
        return _first_error(messages[key], path)
    if isinstance(messages, list) and messages:
        first = messages[0]
        if isinstance(first, (dict, list)):
            return _first_error(first, prefix)
        return prefix, str(first)
    return prefix, str(messages)


CHAT_REQUEST_SCHEMA = ChatRequestSchema()
POP_SCHEMA = PopSchema()
PROGRESS_SCHEMA = ProgressSchema()
SUBMIT_SCHEMA = SubmitSchema()
FAULT_SCHEMA = FaultSchema()
