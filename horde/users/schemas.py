"""The AI Horde's UserDetails, for the Swagger document (horde/http/swagger.py); horde/users/details.py builds it."""

from __future__ import annotations

from marshmallow import Schema, fields

_PRIVATE = "Only in the user's own view (its own API key) and a moderator's"
_MODERATORS = "Only in a moderator's view"


class KudosDetailsSchema(Schema):
    """The user's kudos by where they came from: the sums of its ledger entries by kind."""

    accumulated = fields.Float(metadata={"description": "Earned by its workers, less what its requests cost"})
    gifted = fields.Float(metadata={"description": "Sent to other users (negative)"})
    donated = fields.Float(metadata={"description": "Always 0: no education accounts here"})
    admin = fields.Float(metadata={"description": "Granted or set by the operator"})
    received = fields.Float(metadata={"description": "Received from other users"})
    recurring = fields.Float(metadata={"description": "Always 0"})
    awarded = fields.Float(metadata={"description": "Awarded by moderators (POST /kudos/award)"})
    styled = fields.Float(metadata={"description": "Always 0"})


class UsageSchema(Schema):
    """Image work (obsolete on the AI Horde too): zeros."""

    megapixelsteps = fields.Float()
    requests = fields.Integer()


class ContributionsSchema(Schema):
    """Image work (obsolete on the AI Horde too): zeros."""

    megapixelsteps = fields.Float()
    fulfillments = fields.Integer()


class ThingRecordsSchema(Schema):
    megapixelsteps = fields.Float(metadata={"description": "Always 0: no image work here"})
    tokens = fields.Integer(metadata={"description": "Tokens generated for (usage) or by (contribution) the user"})


class AmountRecordsSchema(Schema):
    image = fields.Integer(metadata={"description": "Always 0"})
    text = fields.Integer(metadata={"description": "Generations: a chat request, or one of a text request's n"})
    interrogation = fields.Integer(metadata={"description": "Always 0"})


class RecordsSchema(Schema):
    usage = fields.Nested(ThingRecordsSchema)
    contribution = fields.Nested(ThingRecordsSchema)
    fulfillment = fields.Nested(AmountRecordsSchema)
    request = fields.Nested(AmountRecordsSchema)
    style = fields.Nested(AmountRecordsSchema)


class ActiveGenerationsSchema(Schema):
    """The user's requests waiting or processing (the anonymous user's: none listed)."""

    text = fields.List(fields.String(), metadata={"description": "Text requests (/generate/text/status/{id})"})
    image = fields.List(fields.String(), metadata={"description": "Always empty"})
    alchemy = fields.List(fields.String(), metadata={"description": "Always empty"})
    chat = fields.List(fields.String(), metadata={"description": "Chat requests (/generate/chat/status/{id})"})


class MonthlyKudosSchema(Schema):
    amount = fields.Integer(metadata={"description": "Always 0"})


class UserDetailsSchema(Schema):
    """The AI Horde's UserDetails: a user as /find_user, /users/{id} and /users answer it."""

    username = fields.String(required=True, metadata={"description": "name#id; the anonymous user is Anonymous#0"})
    id = fields.Integer(required=True, metadata={"description": "0 for the anonymous user"})
    kudos = fields.Float(required=True)
    kudos_details = fields.Nested(KudosDetailsSchema, required=True)
    usage = fields.Nested(UsageSchema, required=True)
    contributions = fields.Nested(ContributionsSchema, required=True)
    records = fields.Nested(RecordsSchema, required=True)
    concurrency = fields.Integer(
        required=True, metadata={"description": "The most of its requests of one kind waiting or running at once"}
    )
    worker_invited = fields.Integer(required=True, metadata={"description": "Workers it may add in invite-only mode"})
    moderator = fields.Boolean(required=True, metadata={"description": "A moderator or an admin"})
    trusted = fields.Boolean(required=True)
    flagged = fields.Boolean(required=True, metadata={"description": "Flagged by a moderator"})
    pseudonymous = fields.Boolean(required=True)
    worker_count = fields.Integer(required=True)
    account_age = fields.Integer(required=True, metadata={"description": "Seconds since the user was created"})
    service = fields.Boolean(required=True)
    deleted = fields.Boolean(required=True, metadata={"description": "Deleted; only a moderator sees such a user"})
    education = fields.Boolean(required=True)
    customizer = fields.Boolean(required=True)
    styles = fields.List(fields.Dict(), required=True, metadata={"description": "Always empty: no styles here"})
    worker_ids = fields.List(
        fields.String(), metadata={"description": _PRIVATE + "; in the public view too when it shows them"}
    )
    sharedkey_ids = fields.List(fields.String(), metadata={"description": _PRIVATE})
    contact = fields.String(allow_none=True, metadata={"description": _PRIVATE})
    vpn = fields.Boolean(metadata={"description": _PRIVATE})
    special = fields.Boolean(metadata={"description": _PRIVATE})
    active_generations = fields.Nested(ActiveGenerationsSchema, metadata={"description": _PRIVATE})
    monthly_kudos = fields.Nested(MonthlyKudosSchema, metadata={"description": _PRIVATE})
    evaluating_kudos = fields.Float(metadata={"description": _PRIVATE})
    suspicious = fields.Integer(metadata={"description": _PRIVATE})
    admin_comment = fields.String(allow_none=True, metadata={"description": _MODERATORS})
