"""The accounts' answer bodies, for the Swagger document (horde/swagger.py); the routes build them as dicts."""

from __future__ import annotations

from marshmallow import Schema, fields


class UserSchema(Schema):
    """GET /find_user: the caller's account, with its balance as it is now."""

    id = fields.Integer(required=True)
    username = fields.String(required=True)
    kudos = fields.Integer(required=True)
    trusted = fields.Boolean(required=True)
