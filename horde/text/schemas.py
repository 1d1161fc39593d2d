"""The text API's payloads, one marshmallow schema each, with the AI Horde's names, defaults and limits.

Unknown keys are left out and named in the async answer's `warnings` (the AI Horde ignores them;
its clients send keys of newer versions), never dropped silently.
"""

from __future__ import annotations

from marshmallow import EXCLUDE, Schema, ValidationError, fields, validate, validates_schema

from horde.http.contract import INTEGER_MAX, SEED_RANGE
from horde.protocol import MAX_CONTEXT_LENGTH_MAX_TOKENS

MAX_GENERATIONS = 20
MIN_LENGTH_TOKENS, MAX_LENGTH_TOKENS, DEFAULT_LENGTH_TOKENS = 16, 1024, 80
MIN_CONTEXT_TOKENS, MAX_CONTEXT_TOKENS, DEFAULT_CONTEXT_TOKENS = 80, 32_768, 1024
MAX_PROMPT_CHARS = 4 * MAX_CONTEXT_TOKENS * 2
MAX_STOP_SEQUENCES = 16
MAX_STOP_SEQUENCE_CHARS = 256
MAX_MODELS = 20
MAX_WORKERS = 5
MAX_NAME_CHARS = 200
MAX_WEBHOOK_CHARS = 1024
MAX_SAMPLER_ORDER = 16
MAX_SOFTPROMPTS = 100
MAX_WORKER_THREADS = 50
MAX_POP_AMOUNT = 20
MAX_POP_WAIT_S = 30
MAX_WORKER_LENGTH_TOKENS = 16_384
MAX_WORKER_CONTEXT_TOKENS = MAX_CONTEXT_LENGTH_MAX_TOKENS
MAX_GENERATION_CHARS = 4 * MAX_WORKER_LENGTH_TOKENS * 2
GENERATION_STATES = ("ok", "censored", "faulted", "csam", "cancelled")
SUBMIT_FINISH_REASONS = ("stop", "length")


def _optional(field_class, *args, **kwargs):
    return field_class(*args, allow_none=True, **kwargs)


def _name_list(maximum: int):
    return _optional(
        fields.List,
        fields.String(validate=validate.Length(min=1, max=MAX_NAME_CHARS)),
        validate=validate.Length(max=maximum),
    )


class ParamsSchema(Schema):
    """`params` (ModelGenerationInputKobold): sampler values go to the worker unchanged."""

    class Meta:
        unknown = EXCLUDE

    n = _optional(fields.Integer, strict=True, validate=validate.Range(min=1, max=MAX_GENERATIONS))
    max_length = _optional(
        fields.Integer, strict=True, validate=validate.Range(min=MIN_LENGTH_TOKENS, max=MAX_LENGTH_TOKENS)
    )
    max_context_length = _optional(
        fields.Integer, strict=True, validate=validate.Range(min=MIN_CONTEXT_TOKENS, max=MAX_CONTEXT_TOKENS)
    )
    temperature = _optional(fields.Float, validate=validate.Range(min=0, max=5))
    top_p = _optional(fields.Float, validate=validate.Range(min=0.001, max=1))
    top_k = _optional(fields.Integer, strict=True, validate=validate.Range(min=0, max=100))
    top_a = _optional(fields.Float, validate=validate.Range(min=0, max=1))
    tfs = _optional(fields.Float, validate=validate.Range(min=0, max=1))
    typical = _optional(fields.Float, validate=validate.Range(min=0, max=1))
    min_p = _optional(fields.Float, validate=validate.Range(min=0, max=1))
    rep_pen = _optional(fields.Float, validate=validate.Range(min=1, max=3))
    rep_pen_range = _optional(fields.Integer, strict=True, validate=validate.Range(min=0, max=4096))
    rep_pen_slope = _optional(fields.Float, validate=validate.Range(min=0, max=10))
    sampler_order = _optional(
        fields.List,
        fields.Integer(strict=True, validate=validate.Range(min=0, max=100)),
        validate=validate.Length(max=MAX_SAMPLER_ORDER),
    )
    stop_sequence = _optional(
        fields.List,
        fields.String(validate=validate.Length(min=1, max=MAX_STOP_SEQUENCE_CHARS)),
        validate=validate.Length(max=MAX_STOP_SEQUENCES),
    )
    use_default_badwordsids = _optional(fields.Boolean)
    smoothing_factor = _optional(fields.Float, validate=validate.Range(min=0, max=10))
    dynatemp_range = _optional(fields.Float, validate=validate.Range(min=0, max=5))
    dynatemp_exponent = _optional(fields.Float, validate=validate.Range(min=0, max=5))
    frmtadsnsp = _optional(fields.Boolean)
    frmtrmblln = _optional(fields.Boolean)
    frmtrmspch = _optional(fields.Boolean)
    frmttriminc = _optional(fields.Boolean)
    singleline = _optional(fields.Boolean)
    #: Not an AI Horde field: the OpenAI front's seed and penalties ride along for workers that take them.
    seed = _optional(fields.Integer, strict=True, validate=validate.Range(*SEED_RANGE))
    frequency_penalty = _optional(fields.Float, validate=validate.Range(min=-2, max=2))
    presence_penalty = _optional(fields.Float, validate=validate.Range(min=-2, max=2))


class WorkerList(fields.Field):
    """`worker_blacklist`: the AI Horde's boolean; horde-sdk 0.18 sends a list (empty by default)."""

    def _deserialize(self, value, attr, data, **kwargs):
        if isinstance(value, bool):
            return value
        if isinstance(value, list) and len(value) <= MAX_WORKERS and all(isinstance(item, str) for item in value):
            return value
        raise ValidationError(f"Must be a boolean (or a list of at most {MAX_WORKERS} worker ids).")


class GenerationInputSchema(Schema):
    """POST /generate/text/async (GenerationInputKobold)."""

    class Meta:
        unknown = EXCLUDE

    prompt = fields.String(required=True, validate=validate.Length(min=1, max=MAX_PROMPT_CHARS))
    params = fields.Nested(ParamsSchema, load_default=dict, allow_none=True)
    softprompt = _optional(fields.String, validate=validate.Length(min=1, max=MAX_NAME_CHARS))
    models = _name_list(MAX_MODELS)
    workers = _name_list(MAX_WORKERS)
    worker_blacklist = WorkerList(load_default=False, allow_none=True)
    trusted_workers = _optional(fields.Boolean, load_default=False)
    validated_backends = _optional(fields.Boolean, load_default=True)
    slow_workers = _optional(fields.Boolean, load_default=True)
    extra_slow_workers = _optional(fields.Boolean, load_default=False)
    nsfw = _optional(fields.Boolean, load_default=False)
    dry_run = _optional(fields.Boolean, load_default=False)
    allow_downgrade = _optional(fields.Boolean, load_default=False)
    webhook = _optional(fields.String, validate=validate.Length(min=1, max=MAX_WEBHOOK_CHARS))
    proxied_account = _optional(fields.String, validate=validate.Length(max=MAX_NAME_CHARS))
    disable_batching = _optional(fields.Boolean, load_default=False)
    style = _optional(fields.String, validate=validate.Length(max=MAX_NAME_CHARS))
    extra_source_images = _optional(fields.List, fields.Dict())


class PopSchema(Schema):
    """POST /generate/text/pop (PopInputKobold)."""

    class Meta:
        unknown = EXCLUDE

    name = fields.String(required=True, validate=validate.Length(min=1, max=100))
    models = fields.List(
        fields.String(validate=validate.Length(min=1, max=MAX_NAME_CHARS)),
        required=True,
        validate=validate.Length(min=1, max=100),
    )
    bridge_agent = _optional(fields.String, load_default="unknown:0:unknown", validate=validate.Length(max=1000))
    threads = _optional(
        fields.Integer, strict=True, load_default=1, validate=validate.Range(min=1, max=MAX_WORKER_THREADS)
    )
    max_length = _optional(
        fields.Integer, strict=True, load_default=512, validate=validate.Range(min=1, max=MAX_WORKER_LENGTH_TOKENS)
    )
    max_context_length = _optional(
        fields.Integer, strict=True, load_default=2048, validate=validate.Range(min=1, max=MAX_WORKER_CONTEXT_TOKENS)
    )
    softprompts = _name_list(MAX_SOFTPROMPTS)
    priority_usernames = _name_list(MAX_SOFTPROMPTS)
    nsfw = _optional(fields.Boolean, load_default=False)
    require_upfront_kudos = _optional(fields.Boolean, load_default=False)
    amount = _optional(fields.Integer, strict=True, load_default=1, validate=validate.Range(min=1, max=MAX_POP_AMOUNT))
    extra_slow_worker = _optional(fields.Boolean, load_default=False)
    allow_unsafe_ipaddr = _optional(fields.Boolean, load_default=True)
    #: Not an AI Horde field: long-poll up to this many seconds for a job (horde/text/pop.py).
    wait = _optional(fields.Float, load_default=0, validate=validate.Range(min=0, max=MAX_POP_WAIT_S))


class GenMetadataSchema(Schema):
    class Meta:
        unknown = EXCLUDE

    type = fields.String(required=True, validate=validate.Length(max=50))
    value = fields.String(required=True, validate=validate.Length(max=50))
    ref = _optional(fields.String, validate=validate.Length(max=255))


class SubmitSchema(Schema):
    """POST /generate/text/submit (SubmitInputKobold)."""

    class Meta:
        unknown = EXCLUDE

    id = fields.String(required=True, validate=validate.Length(min=1, max=36))
    generation = _optional(fields.String, load_default="", validate=validate.Length(max=MAX_GENERATION_CHARS))
    state = _optional(fields.String, load_default="ok", validate=validate.OneOf(GENERATION_STATES))
    seed = _optional(fields.Integer, load_default=0, validate=validate.Range(*SEED_RANGE))
    gen_metadata = _optional(fields.List, fields.Nested(GenMetadataSchema), validate=validate.Length(max=20))
    #: Not an AI Horde field: the reference worker says why it stopped and how many tokens it made.
    finish_reason = _optional(fields.String, validate=validate.OneOf(SUBMIT_FINISH_REASONS))
    completion_tokens = _optional(fields.Integer, strict=True, validate=validate.Range(min=0, max=INTEGER_MAX))
    #: Not an AI Horde field either: how many prompt tokens the worker's backend read from its cache (chat's
    #: usage.cached_tokens); stored at most the prompt's tokens.
    cached_tokens = _optional(fields.Integer, strict=True, validate=validate.Range(min=0, max=INTEGER_MAX))

    @validates_schema
    def _text_for_ok(self, data, **_):
        if data.get("state") in (None, "ok") and data.get("generation") is None:
            raise ValidationError("A generation in state 'ok' needs its text.", "generation")


def unknown_keys(schema: Schema, data: object, prefix: str = "") -> list[str]:
    """Keys of `data` that `schema` leaves out, for the answer's warnings."""
    if not isinstance(data, dict):
        return []
    names = []
    for key, value in data.items():
        field = schema.fields.get(key)
        if field is None:
            names.append(prefix + str(key))
        elif isinstance(field, fields.Nested) and isinstance(value, dict):
            names += unknown_keys(field.schema, value, prefix=f"{prefix}{key}.")
    return names


GENERATION_INPUT_SCHEMA = GenerationInputSchema()
POP_SCHEMA = PopSchema()
SUBMIT_SCHEMA = SubmitSchema()


# -- Answers, with the AI Horde's names, for the Swagger document (horde/http/swagger.py); the routes build
# them as dicts.


class WarningSchema(Schema):
    code = fields.String(required=True)
    message = fields.String(required=True)


class AsyncAnswerSchema(Schema):
    """POST /generate/text/async: 202 {id, kudos, message?, warnings?}; with dry_run, 200 {kudos}."""

    id = fields.String()
    kudos = fields.Integer(required=True)
    message = fields.String(metadata={"description": "Why no worker may take it yet"})
    warnings = fields.List(fields.Nested(WarningSchema))


class GenerationSchema(Schema):
    """GenerationKobold: one submitted generation."""

    id = fields.String(required=True)
    text = fields.String(required=True)
    seed = fields.Integer(required=True)
    worker_id = fields.String(required=True, allow_none=True)
    worker_name = fields.String(required=True, allow_none=True)
    model = fields.String(required=True, allow_none=True)
    state = fields.String(required=True, validate=validate.OneOf(GENERATION_STATES))
    gen_metadata = fields.List(fields.Nested(GenMetadataSchema), required=True)


class StatusSchema(Schema):
    """RequestStatusKobold: counts by stage, the wait, and every generation so far."""

    finished = fields.Integer(required=True)
    processing = fields.Integer(required=True)
    restarted = fields.Integer(required=True)
    waiting = fields.Integer(required=True)
    done = fields.Boolean(required=True)
    faulted = fields.Boolean(required=True)
    wait_time = fields.Integer(required=True)
    queue_position = fields.Integer(required=True)
    kudos = fields.Integer(required=True)
    is_possible = fields.Boolean(required=True)
    generations = fields.List(fields.Nested(GenerationSchema), required=True)


class PopAnswerSchema(Schema):
    """GenerationPayloadKobold: up to `amount` generations of one request, or none and why (skipped)."""

    id = fields.String(required=True, allow_none=True)
    ids = fields.List(fields.String(), required=True)
    payload = fields.Dict(required=True, metadata={"description": "The request's params, its prompt and n"})
    skipped = fields.Dict(keys=fields.String(), values=fields.Integer(), required=True)
    softprompt = fields.String(required=True, allow_none=True)
    model = fields.String(required=True, allow_none=True)
    ttl = fields.Integer(required=True, allow_none=True)
    extra_source_images = fields.List(fields.Dict(), required=True, allow_none=True)


class SubmitAnswerSchema(Schema):
    """POST /generate/text/submit: the kudos rewarded for this generation."""

    reward = fields.Integer(required=True)


class PerModelSchema(Schema):
    """GET /stats/text/models: generations per model in the past day, month and in total."""

    day = fields.Dict(keys=fields.String(), values=fields.Integer(), required=True)
    month = fields.Dict(keys=fields.String(), values=fields.Integer(), required=True)
    total = fields.Dict(keys=fields.String(), values=fields.Integer(), required=True)
