"""Registration's payloads and answers: POST and GET /api/v2/register, a new API key, the sign-in session.

The routes load the inputs with these schemas (horde/http/payload.py) and build the answers as dicts; the answer
schemas write the Swagger document (horde/http/swagger.py). Unknown keys of an input are left out, as the AI
Horde's request parser leaves them. The name's own rules are horde/registration/usernames.py's.
"""

from __future__ import annotations

from marshmallow import EXCLUDE, Schema, fields, validate

from horde.registration.invites import MAX_INVITE_CODE_CHARS
from horde.registration.modes import Mode


class RegisterSchema(Schema):
    """POST /api/v2/register: the new account's name, and the invite code where registration asks for one."""

    class Meta:
        unknown = EXCLUDE

    username = fields.String(required=True, metadata={"description": "1 to 50 characters; names may repeat"})
    invite_code = fields.String(
        load_default=None,
        allow_none=True,
        validate=validate.Length(max=MAX_INVITE_CODE_CHARS),
        metadata={"description": "Needed when registration is by invitation"},
    )


class RegisteredSchema(Schema):
    """The new account; its API key is shown this once."""

    id = fields.Integer(required=True)
    username = fields.String(required=True, metadata={"description": "name#id"})
    api_key = fields.String(required=True)


class OidcStatusSchema(Schema):
    enabled = fields.Boolean(required=True)
    login_url = fields.String(required=True)
    provider = fields.String(required=True, metadata={"description": "The provider's name, for the sign-in link"})


class RegistrationStatusSchema(Schema):
    """GET /api/v2/register: what the web page offers."""

    registration = fields.String(required=True, validate=validate.OneOf([mode.value for mode in Mode]))
    oidc = fields.Nested(OidcStatusSchema, required=True)


class ApiKeySchema(Schema):
    """A new API key, shown this once; the key it replaces is refused from the next request on."""

    api_key = fields.String(required=True)


class SignedInUserSchema(Schema):
    id = fields.Integer(required=True)
    username = fields.String(required=True, metadata={"description": "name#id"})
    kudos = fields.Float(required=True)


class SignInSessionSchema(Schema):
    """GET /api/v2/oidc/session: who the browser is signed in as through the OpenID Connect provider."""

    signed_in = fields.Boolean(required=True)
    user = fields.Nested(SignedInUserSchema, metadata={"description": "Present when signed in"})
    new_account = fields.Boolean(metadata={"description": "The sign-in made the account: ask for its first key"})
    csrf_token = fields.String(metadata={"description": "Send it as X-CSRF-Token with each change"})
    expires_at = fields.String(metadata={"description": "When the session ends (ISO 8601, UTC)"})


REGISTER_SCHEMA = RegisterSchema()
