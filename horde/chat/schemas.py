"""The native chat request's payload: its marshmallow schema.

The OpenAI front screens its own body (horde/oai/screening/) and hands the result to the same
`ChatRequestSchema` that the native async route uses. The worker protocol's payloads are in
horde/workers/schemas.py; both are loaded with horde/http/payload.py.
"""

from __future__ import annotations

from typing import ClassVar

from marshmallow import RAISE, Schema, ValidationError, fields, post_load, validate, validates_schema

from horde.chat.conversation import CONVERSATION_KEY_MAX_CHARS
from horde.chat.models import RequestState
from horde.cooperative import pause_every
from horde.http.contract import (
    AVAILABILITY_MODES,
    CONFORMANCE_MODES,
    CONTEXT_FITTING_MODES,
    DEFAULT_AVAILABILITY_MODE,
    DEFAULT_CONFORMANCE,
    DEFAULT_CONTEXT_FITTING,
    FINISH_REASONS,
    MAX_KUDOS,
    MAX_MODELS_PER_REQUEST,
    MAX_STOP_SEQUENCES,
    MESSAGE_ROLES,
    MODEL_NAME_MAX_CHARS,
    REASONING_EFFORTS,
    SAMPLING_RANGES,
    SEED_RANGE,
    TOKEN_CEILING,
    TOKEN_FLOOR,
)
from horde.workers.schemas import ToolCallSchema, UsageSchema


class ObjectList(fields.Field):
    """A list of JSON objects, checked in one pass (a List of Dict fields costs a field call per item)."""

    json_schema: ClassVar[dict] = {"type": "array", "items": {"type": "object"}}
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
    seed = fields.Integer(strict=True, validate=validate.Range(*SEED_RANGE))
    stop = fields.List(fields.String(), validate=validate.Length(min=1, max=MAX_STOP_SEQUENCES))
    reasoning_effort = fields.String(validate=validate.OneOf(REASONING_EFFORTS))
    only = fields.List(fields.String(), validate=validate.Length(min=1))  # type: ignore[assignment]  # a field, not Schema.only
    trusted_workers = fields.Boolean(load_default=False)
    context_fitting = fields.String(
        load_default=DEFAULT_CONTEXT_FITTING, validate=validate.OneOf(CONTEXT_FITTING_MODES)
    )
    max_kudos = fields.Integer(strict=True, validate=validate.Range(min=1, max=MAX_KUDOS))
    conformance = fields.String(load_default=DEFAULT_CONFORMANCE, validate=validate.OneOf(CONFORMANCE_MODES))
    availability_mode = fields.String(
        load_default=DEFAULT_AVAILABILITY_MODE, validate=validate.OneOf(AVAILABILITY_MODES)
    )
    conversation_key = fields.String(
        validate=validate.Length(min=1, max=CONVERSATION_KEY_MAX_CHARS),
        metadata={"description": "The conversation the request continues; its turns go to one worker while it is free"},
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


# -- Answers. They document the bodies the routes build as dicts (horde/http/swagger.py); a test checks real
# answers against them, and nothing dumps through them at run time.


class ChatAsyncAnswerSchema(Schema):
    """202 to POST /generate/chat/async: the queued request's id and its kudos estimate."""

    id = fields.String(required=True)
    kudos = fields.Integer(required=True)


class ProgressViewSchema(Schema):
    """The text a worker has posted so far."""

    content = fields.String(required=True)
    reasoning_content = fields.String(required=True)


class FaultViewSchema(Schema):
    """The last fault of a request that is not done: its return code and message."""

    rc = fields.String(required=True)
    message = fields.String(required=True, allow_none=True)


class ReplySchema(Schema):
    """The accepted reply, as the worker submitted it, with the usage the Horde billed."""

    content = fields.String(required=True, allow_none=True)
    reasoning_content = fields.String(required=True, allow_none=True)
    tool_calls = fields.List(fields.Nested(ToolCallSchema), required=True, allow_none=True)
    finish_reason = fields.String(required=True, validate=validate.OneOf(FINISH_REASONS))
    usage = fields.Nested(UsageSchema, required=True)


class ContextAdjustmentSchema(Schema):
    """One change context fitting made: the context grown, or the oldest turns dropped."""

    reason = fields.String(required=True, validate=validate.OneOf(CONTEXT_FITTING_MODES))
    from_ = fields.Integer(required=True, data_key="from")
    to = fields.Integer(required=True)
    dropped_messages = fields.Integer()


class ChatStatusSchema(Schema):
    """GET and DELETE /generate/chat/status/{id}: the request as it stands."""

    id = fields.String(required=True)
    state = fields.String(required=True, validate=validate.OneOf([state.value for state in RequestState]))
    model = fields.String(required=True, allow_none=True, metadata={"description": "The model that served it"})
    models = fields.List(fields.String(), required=True)
    worker_id = fields.String(required=True, allow_none=True)
    worker_name = fields.String(required=True, allow_none=True)
    kudos = fields.Integer(required=True, metadata={"description": "Charged when done, else the estimate"})
    kudos_estimate = fields.Integer(required=True)
    kudos_charged = fields.Integer(required=True)
    context_adjustments = fields.List(fields.Nested(ContextAdjustmentSchema), required=True, allow_none=True)
    attempts = fields.Integer(required=True)
    reply = fields.Nested(ReplySchema, required=True, allow_none=True)
    progress = fields.Nested(ProgressViewSchema, required=True, allow_none=True)
    faulted = fields.Nested(FaultViewSchema, required=True, allow_none=True)
    queue_position = fields.Integer(required=True)
    wait_time = fields.Integer(required=True, metadata={"description": "Seconds, while waiting"})


class ModelStatusSchema(Schema):
    """GET /status/models entries: one per model and kind of worker (type=text or type=chat), chat's or text's fields;
    `type` is the AI Horde's kind of generation, "text" for both (its clients refuse any but text and image)."""

    name = fields.String(required=True)
    type = fields.String(required=True, validate=validate.OneOf(("text", "image")))
    threads = fields.Integer(required=True)
    queued = fields.Integer(required=True, metadata={"description": "chat: requests; text: tokens"})
    max_length = fields.Integer(required=True)
    max_context_length = fields.Integer(required=True)
    worker_ids = fields.List(fields.String(), required=True)
    worker_names = fields.List(fields.String(), required=True)
    workers = fields.Integer(metadata={"description": "chat only"})
    estimated_wait = fields.Integer(metadata={"description": "chat only: seconds"})
    features = fields.List(fields.String(), metadata={"description": "chat only"})
    guarantees = fields.List(fields.String(), metadata={"description": "chat only"})
    max_temperature_with_tools = fields.Float(allow_none=True, metadata={"description": "chat only"})
    count = fields.Integer(metadata={"description": "text only: workers"})
    performance = fields.Float(metadata={"description": "text only: tokens per second"})
    jobs = fields.Integer(metadata={"description": "text only: queued generations"})
    eta = fields.Integer(metadata={"description": "text only: seconds"})


class PeriodCountsSchema(Schema):
    requests = fields.Integer(required=True)
    tokens = fields.Integer(required=True)


class TotalsSchema(Schema):
    """GET /stats/chat/totals and /stats/text/totals: requests served and tokens generated per period."""

    minute = fields.Nested(PeriodCountsSchema, required=True)
    hour = fields.Nested(PeriodCountsSchema, required=True)
    day = fields.Nested(PeriodCountsSchema, required=True)
    month = fields.Nested(PeriodCountsSchema, required=True)
    total = fields.Nested(PeriodCountsSchema, required=True)
