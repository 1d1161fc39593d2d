"""The worker protocol's payloads (pop, progress, submit, fault): one marshmallow schema per payload."""

from __future__ import annotations

from marshmallow import RAISE, Schema, ValidationError, fields, validate, validates_schema

from horde.http.contract import FINISH_REASONS, INTEGER_MAX, MODEL_NAME_MAX_CHARS
from horde.protocol import (
    FEATURES,
    GUARANTEES,
    MAX_CONTEXT_LENGTH_MAX_TOKENS,
    MAX_CONTEXT_LENGTH_MIN_TOKENS,
    MAX_LENGTH_MAX_TOKENS,
    MAX_LENGTH_MIN_TOKENS,
    MODELS_MAX,
    NAME_MAX_CHARS,
    POP_WAIT_MAX_S,
    THREADS_MAX,
    THREADS_MIN,
)


class PopSchema(Schema):
    class Meta:
        unknown = RAISE

    name = fields.String(required=True, validate=validate.Length(min=1, max=NAME_MAX_CHARS))
    models = fields.List(
        fields.String(validate=validate.Length(min=1, max=MODEL_NAME_MAX_CHARS)),
        required=True,
        validate=validate.Length(min=1, max=MODELS_MAX),
    )
    max_length = fields.Integer(
        required=True, strict=True, validate=validate.Range(min=MAX_LENGTH_MIN_TOKENS, max=MAX_LENGTH_MAX_TOKENS)
    )
    max_context_length = fields.Integer(
        required=True,
        strict=True,
        validate=validate.Range(min=MAX_CONTEXT_LENGTH_MIN_TOKENS, max=MAX_CONTEXT_LENGTH_MAX_TOKENS),
    )
    threads = fields.Integer(
        load_default=THREADS_MIN, strict=True, validate=validate.Range(min=THREADS_MIN, max=THREADS_MAX)
    )
    features = fields.List(fields.String(validate=validate.OneOf(FEATURES)), load_default=list)
    guarantees = fields.List(fields.String(validate=validate.OneOf(GUARANTEES)), load_default=list)
    limits = fields.Dict(load_default=dict)
    bridge_agent = fields.String(load_default="unknown:0:unknown", validate=validate.Length(max=300))
    wait = fields.Float(load_default=0, validate=validate.Range(min=0, max=POP_WAIT_MAX_S))

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

    prompt_tokens = fields.Integer(strict=True, validate=validate.Range(min=0, max=INTEGER_MAX))
    completion_tokens = fields.Integer(strict=True, validate=validate.Range(min=0, max=INTEGER_MAX))
    reasoning_tokens = fields.Integer(strict=True, validate=validate.Range(min=0, max=INTEGER_MAX))
    cached_tokens = fields.Integer(
        strict=True,
        validate=validate.Range(min=0, max=INTEGER_MAX),
        metadata={"description": "Prompt tokens the backend read from its cache (at most the prompt tokens)"},
    )


#: Submit and fault may carry the next pop: the same body /pop takes, validated before anything changes.
_NEXT_POP_DESCRIPTION = (
    "Optional: a /pop body; after the call succeeds the server pops for this worker and answers the job in `next`"
)


class SubmitSchema(Schema):
    class Meta:
        unknown = RAISE

    id = fields.String(required=True)
    content = fields.String(allow_none=True, load_default=None)
    reasoning_content = fields.String(allow_none=True, load_default=None)
    tool_calls = fields.List(fields.Nested(ToolCallSchema), allow_none=True, load_default=None)
    finish_reason = fields.String(load_default="stop", validate=validate.OneOf(FINISH_REASONS))
    usage = fields.Nested(UsageSchema, load_default=dict)
    pop = fields.Nested(PopSchema, metadata={"description": _NEXT_POP_DESCRIPTION})


class FaultSchema(Schema):
    class Meta:
        unknown = RAISE

    id = fields.String(required=True)
    reason = fields.String(
        load_default="The worker reported a fault without a reason.", validate=validate.Length(max=2000)
    )
    pop = fields.Nested(PopSchema, metadata={"description": _NEXT_POP_DESCRIPTION})


POP_SCHEMA = PopSchema()
PROGRESS_SCHEMA = ProgressSchema()
SUBMIT_SCHEMA = SubmitSchema()
FAULT_SCHEMA = FaultSchema()


# -- Answers, for the Swagger document (horde/http/swagger.py); the routes build them as dicts.


class PopAnswerSchema(Schema):
    """POST /generate/chat/pop: a job (id, model, ttl, payload), or no job and why (skipped)."""

    id = fields.String(required=True, allow_none=True)
    model = fields.String()
    ttl = fields.Integer(metadata={"description": "Seconds the worker has to submit"})
    payload = fields.Dict(metadata={"description": "The native chat request, with its max_context_length"})
    skipped = fields.Dict(
        keys=fields.String(),
        values=fields.Integer(),
        metadata={"description": "Waiting requests not given to this worker, by the first reason"},
    )


class ProgressAnswerSchema(Schema):
    """POST /generate/chat/progress: whether the worker should stop (the request was cancelled)."""

    cancel = fields.Boolean(required=True)


class NextJobSchema(PopAnswerSchema):
    """The pop a submit or fault carried: what /pop would have answered, or no job and the pop's refusal."""

    rc = fields.String(metadata={"description": "The pop's refusal, when it was refused after the call succeeded"})
    message = fields.String(metadata={"description": "The refusal's message, with rc"})


_NEXT_DESCRIPTION = "Present when the call carried `pop`: the job it popped, or none and why"


class SubmitAnswerSchema(Schema):
    """POST /generate/chat/submit: the kudos the worker's owner earned, and the next job when it asked."""

    reward = fields.Integer(required=True)
    next = fields.Nested(NextJobSchema, metadata={"description": _NEXT_DESCRIPTION})


class FaultAnswerSchema(Schema):
    """POST /generate/chat/fault: noted, and the next job when it asked."""

    message = fields.String(required=True)
    next = fields.Nested(NextJobSchema, metadata={"description": _NEXT_DESCRIPTION})
