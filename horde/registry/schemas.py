"""The registry's answer bodies, as the AI Horde names them, for the Swagger document (horde/swagger.py).

The routes build them as dicts (horde/registry/views.py); a test checks real answers against them.
"""

from __future__ import annotations

from marshmallow import Schema, fields, validate

from horde.registry.views import KINDS


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
    maintenance_mode = fields.Boolean(required=True)
    paused = fields.Boolean(required=True)
    info = fields.String(required=True, allow_none=True)
    nsfw = fields.Boolean(required=True)
    trusted = fields.Boolean(required=True)
    flagged = fields.Boolean(required=True)
    uncompleted_jobs = fields.Integer(required=True)
    bridge_agent = fields.String(required=True)
    team = fields.Nested(TeamSchema, required=True)
    tokens_generated = fields.Integer(required=True)
    models = fields.List(fields.String(), required=True)
    max_length = fields.Integer(required=True, allow_none=True)
    max_context_length = fields.Integer(required=True, allow_none=True)
    softprompts = fields.List(fields.String(), metadata={"description": "text only"})
    features = fields.List(fields.String(), metadata={"description": "chat only"})
    guarantees = fields.List(fields.String(), metadata={"description": "chat only"})


class HeartbeatSchema(Schema):
    """GET /status/heartbeat: the process answers."""

    message = fields.String(required=True)
    version = fields.String(required=True)
