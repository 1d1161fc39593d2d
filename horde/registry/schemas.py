"""The registry's answer bodies, as the AI Horde names them, for the Swagger document (horde/http/swagger.py).

The routes build them as dicts (horde/registry/views.py); a test checks real answers against them.
"""

from __future__ import annotations

from marshmallow import EXCLUDE, Schema, fields, validate

from horde.oversight.models import MAX_REASON_CHARS
from horde.registry.views import KINDS
from horde.workers.models import MAX_MAINTENANCE_MSG_CHARS


class KudosDetailsSchema(Schema):
    generated = fields.Integer(required=True)
    uptime = fields.Integer(required=True)


class TeamSchema(Schema):
    name = fields.String(required=True, allow_none=True)
    id = fields.String(required=True, allow_none=True)


class WorkerDetailSchema(Schema):
    """WorkerDetailItem: a worker with the declarations of its `type` (text: softprompts; chat: features)."""

    type = fields.String(required=True, validate=validate.OneOf(KINDS))
    name = fields.String(required=True)
    id = fields.String(required=True)
    online = fields.Boolean(required=True)
    requests_fulfilled = fields.Integer(required=True)
    kudos_rewards = fields.Integer(required=True)
    kudos_details = fields.Nested(KudosDetailsSchema, required=True)
    performance = fields.String(required=True)
    threads = fields.Integer(required=True)
    uptime = fields.Integer(required=True, metadata={"description": "Seconds since the worker first popped"})
    maintenance_mode = fields.Boolean(required=True, metadata={"description": "Put in maintenance by its owner"})
    paused = fields.Boolean(required=True, metadata={"description": "Paused by a moderator; shown to moderators"})
    info = fields.String(required=True, allow_none=True, metadata={"description": "Its owner's note"})
    nsfw = fields.Boolean(required=True)
    trusted = fields.Boolean(required=True)
    flagged = fields.Boolean(required=True, metadata={"description": "Its owner was flagged: it takes no jobs"})
    uncompleted_jobs = fields.Integer(required=True)
    bridge_agent = fields.String(required=True)
    team = fields.Nested(TeamSchema, required=True)
    tokens_generated = fields.Integer(required=True)
    models = fields.List(fields.String(), required=True)
    max_length = fields.Integer(required=True, allow_none=True)
    max_context_length = fields.Integer(required=True, allow_none=True)
    softprompts = fields.List(fields.String(), metadata={"description": "text only"})
    owner = fields.String(
        metadata={"description": "name#id: to a moderator, the owner, and everyone when the owner shows its workers"}
    )
    ipaddr = fields.String(
        allow_none=True, metadata={"description": "Its latest check-in's address: moderators, owner"}
    )
    contact = fields.String(allow_none=True, metadata={"description": "Its owner's contact: moderators, the owner"})
    features = fields.List(fields.String(), metadata={"description": "chat only"})
    guarantees = fields.List(fields.String(), metadata={"description": "chat only"})


class HeartbeatSchema(Schema):
    """GET /status/heartbeat: the process answers."""

    message = fields.String(required=True)
    version = fields.String(required=True)


class ModifyWorkerSchema(Schema):
    """PUT /workers/{id} (ModifyWorkerInput): what to change; a null or absent key changes nothing."""

    class Meta:
        unknown = EXCLUDE  # as the AI Horde: keys it does not know are ignored

    maintenance = fields.Boolean(allow_none=True, metadata={"description": "True: the worker takes no jobs"})
    maintenance_msg = fields.String(
        allow_none=True,
        validate=validate.Length(max=MAX_MAINTENANCE_MSG_CHARS),
        metadata={"description": "With maintenance true: what its pops are answered (403 WorkerMaintenance)"},
    )
    paused = fields.Boolean(
        allow_none=True,
        metadata={"description": "Moderators only. True: the worker takes no jobs; its pops are answered as if none"},
    )
    info = fields.String(allow_none=True, metadata={"description": "A note shown with the worker; up to 1000 chars"})
    name = fields.String(allow_none=True, metadata={"description": "A new name, 5 to 100 characters, unique"})
    team = fields.String(
        allow_none=True, validate=validate.Length(max=36), metadata={"description": "'' leaves the worker teamless"}
    )
    reason = fields.String(
        allow_none=True,
        validate=validate.Length(max=MAX_REASON_CHARS),
        metadata={"description": "A moderator's reason, kept in the audit trail with the change"},
    )


MODIFY_WORKER_SCHEMA = ModifyWorkerSchema()


class ModifyWorkerAnswerSchema(Schema):
    """ModifyWorker: only the fields the PUT changed."""

    maintenance = fields.Boolean()
    info = fields.String()
    name = fields.String()
    team = fields.String()
    paused = fields.Boolean()


class DeletedWorkerSchema(Schema):
    deleted_id = fields.String(required=True)
    deleted_name = fields.String(required=True)


class PerformanceSchema(Schema):
    """HordePerformance: text figures from this Horde; the image and interrogation ones are 0 (it has none)."""

    queued_requests = fields.Integer(required=True, metadata={"description": "Image generations: 0"})
    queued_text_requests = fields.Integer(
        required=True, metadata={"description": "Text generations waiting or running"}
    )
    worker_count = fields.Integer(required=True, metadata={"description": "Image workers: 0"})
    text_worker_count = fields.Integer(required=True, metadata={"description": "Workers that popped text lately"})
    thread_count = fields.Integer(required=True, metadata={"description": "Image worker threads: 0"})
    text_thread_count = fields.Integer(required=True)
    queued_tokens = fields.Float(required=True, metadata={"description": "Tokens the queued text generations ask"})
    past_minute_tokens = fields.Float(
        required=True, metadata={"description": "Tokens generated in the last minute, text and chat together"}
    )
    queued_megapixelsteps = fields.Float(required=True)
    past_minute_megapixelsteps = fields.Float(required=True)
    queued_forms = fields.Float(required=True)
    interrogator_count = fields.Integer(required=True)
    interrogator_thread_count = fields.Integer(required=True)


class NewspieceSchema(Schema):
    date_published = fields.String(required=True)
    newspiece = fields.String(required=True)
    importance = fields.String(required=True)
    title = fields.String(allow_none=True)
    tags = fields.List(fields.String())
    more_info_urls = fields.List(fields.String())


class TeamDetailsSchema(Schema):
    """TeamDetails; this Horde has no teams, so no answer holds one."""

    id = fields.String(required=True)
    name = fields.String(required=True)
    info = fields.String(allow_none=True)
    requests_fulfilled = fields.Integer()
    kudos = fields.Float()
    uptime = fields.Integer()
    creator = fields.String()
    worker_count = fields.Integer()


class ImagePeriodSchema(Schema):
    images = fields.Integer(required=True)
    ps = fields.Integer(required=True)


class ImageTotalsSchema(Schema):
    """/stats/img/totals: this Horde makes no images."""

    minute = fields.Nested(ImagePeriodSchema, required=True)
    hour = fields.Nested(ImagePeriodSchema, required=True)
    day = fields.Nested(ImagePeriodSchema, required=True)
    month = fields.Nested(ImagePeriodSchema, required=True)
    total = fields.Nested(ImagePeriodSchema, required=True)


class ImageModelsSchema(Schema):
    """/stats/img/models: images per model, none here."""

    day = fields.Dict(keys=fields.String(), values=fields.Integer(), required=True)
    month = fields.Dict(keys=fields.String(), values=fields.Integer(), required=True)
    total = fields.Dict(keys=fields.String(), values=fields.Integer(), required=True)
