"""The moderation payloads and answers, with the AI Horde's names and bounds (horde-sdk 0.18.0's models), for
loading (horde/http/payload.py) and for the Swagger document (horde/http/swagger.py)."""

from __future__ import annotations

from marshmallow import EXCLUDE, Schema, fields, validate

from horde.accounts.models import MAX_ADMIN_COMMENT_CHARS, MAX_CONTACT_CHARS
from horde.oversight.addresses import MAX_ADDRESS_TEXT_CHARS
from horde.oversight.models import MAX_REASON_CHARS

#: The AI Horde's bounds of ModifyUserInput.
MAX_CONCURRENCY = 500
MIN_USAGE_MULTIPLIER, MAX_USAGE_MULTIPLIER = 0.1, 10.0
MAX_WORKER_INVITED = 10_000
MIN_USERNAME_CHARS, MAX_USERNAME_INPUT_CHARS = 3, 100
MIN_NOTE_CHARS = 5
#: An award or a change of kudos at once: within the 64-bit range whatever the balance, and a bound on mistakes.
MAX_KUDOS_AT_ONCE = 10**15
MAX_TIMEOUT_HOURS = 24 * 365 * 10
MAX_BLOCK_DAYS = 365 * 10
_REASON = {"description": "Why: kept in the audit trail with the change (this Horde's addition)"}


def _reason() -> fields.String:
    return fields.String(allow_none=True, validate=validate.Length(max=MAX_REASON_CHARS), metadata=_REASON)


class ModifyUserSchema(Schema):
    """ModifyUserInput: PUT /users/{id}. A null or absent field changes nothing; every field names who may set it
    (docs/reference/moderation.md). The AI Horde's fields that this Horde has no notion of are refused (400)."""

    class Meta:
        unknown = EXCLUDE  # as the AI Horde: keys it does not know are ignored
        ordered = True

    kudos = fields.Float(
        allow_none=True,
        validate=validate.Range(-MAX_KUDOS_AT_ONCE, MAX_KUDOS_AT_ONCE),
        metadata={"description": "Admins: kudos to add (negative: take), a whole number, on the ledger"},
    )
    monthly_kudos = fields.Integer(
        allow_none=True,
        validate=validate.Range(0, 0, error="This Horde has no monthly kudos."),
        metadata={"description": "Not supported here: refused"},
    )
    usage_multiplier = fields.Float(
        allow_none=True,
        validate=validate.Range(MIN_USAGE_MULTIPLIER, MAX_USAGE_MULTIPLIER),
        metadata={"description": "Admins: the user's requests cost their price times this"},
    )
    moderator = fields.Boolean(allow_none=True, metadata={"description": "Admins: make the user a moderator, or not"})
    concurrency = fields.Integer(
        allow_none=True,
        validate=validate.Range(0, MAX_CONCURRENCY),
        metadata={"description": "Moderators: the most requests of one kind it may have waiting or running"},
    )
    worker_invited = fields.Integer(
        allow_none=True,
        validate=validate.Range(0, MAX_WORKER_INVITED),
        metadata={"description": "Moderators: the workers it may have in worker invite-only mode"},
    )
    trusted = fields.Boolean(allow_none=True, metadata={"description": "Moderators: trust it (unpauses its workers)"})
    flagged = fields.Boolean(
        allow_none=True,
        metadata={
            "description": "Moderators: its workers take no jobs and earn nothing; it sends and receives no kudos"
        },
    )
    customizer = fields.Boolean(allow_none=True, metadata={"description": "Not supported here: refused"})
    vpn = fields.Boolean(allow_none=True, metadata={"description": "Not supported here: refused"})
    service = fields.Boolean(allow_none=True, metadata={"description": "Not supported here: refused"})
    education = fields.Boolean(allow_none=True, metadata={"description": "Not supported here: refused"})
    special = fields.Boolean(allow_none=True, metadata={"description": "Not supported here: refused"})
    filtered = fields.Boolean(allow_none=True, metadata={"description": "Not supported here: refused"})
    reset_suspicion = fields.Boolean(allow_none=True, metadata={"description": "Not supported here: refused"})
    admin_comment = fields.String(
        allow_none=True,
        validate=validate.Length(MIN_NOTE_CHARS, MAX_ADMIN_COMMENT_CHARS),
        metadata={"description": "Moderators: a note on the user, which only moderators see"},
    )
    public_workers = fields.Boolean(
        allow_none=True, metadata={"description": "The user or a moderator: show its worker ids to everyone"}
    )
    username = fields.String(
        allow_none=True,
        validate=validate.Length(MIN_USERNAME_CHARS, MAX_USERNAME_INPUT_CHARS),
        metadata={"description": "The user or a moderator: a new name (at most 50 characters)"},
    )
    contact = fields.String(
        allow_none=True,
        validate=validate.Length(MIN_NOTE_CHARS, MAX_CONTACT_CHARS),
        metadata={"description": "The user or a moderator: how moderators may reach the user"},
    )
    generate_proxy_passkey = fields.Boolean(allow_none=True, metadata={"description": "Not supported here: refused"})
    undelete = fields.Boolean(allow_none=True, metadata={"description": "Not supported here: refused"})
    reason = _reason()


MODIFY_USER_SCHEMA = ModifyUserSchema()


class ModifiedUserSchema(Schema):
    """ModifyUser: the fields the PUT set, with their new values; `new_kudos`: the balance after a change of kudos."""

    new_kudos = fields.Float()
    concurrency = fields.Integer()
    usage_multiplier = fields.Float()
    worker_invited = fields.Integer()
    moderator = fields.Boolean()
    public_workers = fields.Boolean()
    username = fields.String()
    trusted = fields.Boolean()
    flagged = fields.Boolean()
    contact = fields.String()
    admin_comment = fields.String()


class ReasonSchema(Schema):
    """An optional body of a DELETE: why (the audit trail)."""

    class Meta:
        unknown = EXCLUDE

    reason = _reason()


REASON_SCHEMA = ReasonSchema()


class SimpleResponseSchema(Schema):
    message = fields.String(required=True, metadata={"description": "OK"})


class RemoveTimeoutSchema(Schema):
    """DeleteTimeoutIPAddressInput: DELETE /operations/ipaddr."""

    class Meta:
        unknown = EXCLUDE

    ipaddr = fields.String(
        required=True,
        validate=validate.Length(1, MAX_ADDRESS_TEXT_CHARS),
        metadata={"description": "An IPv4 or IPv6 address, or a network in CIDR (at most /8 wide, IPv6 /32)"},
    )
    reason = _reason()


REMOVE_TIMEOUT_SCHEMA = RemoveTimeoutSchema()


class AddTimeoutSchema(RemoveTimeoutSchema):
    """AddTimeoutIPAddressInput: POST /operations/ipaddr."""

    hours = fields.Integer(
        required=True,
        validate=validate.Range(1, MAX_TIMEOUT_HOURS),
        metadata={"description": "How long the timeout lasts"},
    )


ADD_TIMEOUT_SCHEMA = AddTimeoutSchema()


class TimeoutSchema(Schema):
    """IPTimeout: an address or network in timeout."""

    ipaddr = fields.String(required=True, metadata={"description": "An address alone, or a network in CIDR"})
    seconds = fields.Integer(required=True, metadata={"description": "Seconds left"})


class BlockWorkerSchema(Schema):
    """AddWorkerTimeout: PUT /operations/block_worker_ipaddr/{worker_id}."""

    class Meta:
        unknown = EXCLUDE

    days = fields.Integer(
        required=True, validate=validate.Range(1, MAX_BLOCK_DAYS), metadata={"description": "How long"}
    )
    reason = _reason()


BLOCK_WORKER_SCHEMA = BlockWorkerSchema()


class ModesInputSchema(Schema):
    """PUT /status/modes: the modes to set; a null or absent one stays as it is."""

    class Meta:
        unknown = EXCLUDE

    maintenance_mode = fields.Boolean(
        allow_none=True, metadata={"description": "No new generation request (503 MaintenanceMode)"}
    )
    invite_only_mode = fields.Boolean(
        allow_none=True, metadata={"description": "A user adds workers only as many as it was invited to"}
    )
    raid_mode = fields.Boolean(
        allow_none=True,
        metadata={"description": "Registration closed; new untrusted accounts queue no generation"},
    )
    reason = _reason()


MODES_INPUT_SCHEMA = ModesInputSchema()


class ModesSchema(Schema):
    """HordeModes: raid mode only to a moderator (as on the AI Horde); a PUT answers the modes it set."""

    maintenance_mode = fields.Boolean()
    invite_only_mode = fields.Boolean()
    raid_mode = fields.Boolean(metadata={"description": "Shown to moderators only"})


class AwardSchema(Schema):
    """KudosAwardInput: POST /kudos/award."""

    class Meta:
        unknown = EXCLUDE

    username = fields.String(
        required=True, validate=validate.Length(1, 200), metadata={"description": "The user awarded: name#id"}
    )
    amount = fields.Integer(
        load_default=100,
        validate=validate.Range(1, MAX_KUDOS_AT_ONCE),
        metadata={"description": "The kudos awarded (the AI Horde's default: 100)"},
    )
    reason = _reason()


AWARD_SCHEMA = AwardSchema()


class AwardedSchema(Schema):
    awarded = fields.Float(required=True)


class AuditEntrySchema(Schema):
    """One record of the audit trail."""

    id = fields.Integer(required=True)
    at = fields.String(required=True, metadata={"description": "When, UTC, ISO 8601"})
    actor = fields.String(required=True, metadata={"description": "name#id, or `operator <login>`"})
    actor_id = fields.Integer(required=True, allow_none=True, metadata={"description": "None: the command line"})
    action = fields.String(required=True)
    target_kind = fields.String(required=True, metadata={"description": "user, worker, address or modes"})
    target = fields.String(required=True)
    before = fields.Dict(required=True, allow_none=True)
    after = fields.Dict(required=True, allow_none=True)
    reason = fields.String(required=True, allow_none=True)


class AuditPageSchema(Schema):
    entries = fields.List(fields.Nested(AuditEntrySchema), required=True)
    next_before = fields.Integer(
        required=True, allow_none=True, metadata={"description": "The `before` of the next page; null: none older"}
    )
