"""The console's answer bodies, for the Swagger document (horde/http/swagger.py); the services build them as
dicts and a test checks real answers against them."""

from __future__ import annotations

from marshmallow import Schema, fields

from horde.registry.schemas import WorkerDetailSchema


class CounterpartSchema(Schema):
    """The other user of a gift, or the moderator of an award or adjustment."""

    id = fields.Integer(required=True)
    username = fields.String(required=True, metadata={"description": "name#id"})


class LedgerEntrySchema(Schema):
    """One movement of kudos, with the balance it left."""

    id = fields.Integer(required=True)
    created_at = fields.String(required=True, metadata={"description": "ISO 8601, UTC (Z)"})
    kind = fields.String(
        required=True, metadata={"description": "grant, adjustment, charge, reward, gifted, received or awarded"}
    )
    amount = fields.Integer(required=True, metadata={"description": "Kudos added (negative: taken)"})
    request_id = fields.String(required=True, allow_none=True, metadata={"description": "A charge's or reward's"})
    counterpart = fields.Nested(CounterpartSchema, required=True, allow_none=True)
    balance_after = fields.Integer(required=True, metadata={"description": "The balance right after this entry"})


class LedgerPageSchema(Schema):
    """A page of the user's ledger, newest first."""

    entries = fields.List(fields.Nested(LedgerEntrySchema), required=True)
    next_cursor = fields.String(
        required=True, allow_none=True, metadata={"description": "Pass as `cursor` for the next page; null: the last"}
    )
    balance = fields.Integer(required=True, metadata={"description": "The user's balance now"})


class BalanceDaySchema(Schema):
    day = fields.String(required=True, metadata={"description": "YYYY-MM-DD (UTC)"})
    balance = fields.Integer(required=True, metadata={"description": "The balance at the end of the day"})


class BalanceHistorySchema(Schema):
    """The closing balance of each day of the window, oldest first; the last is today's, the balance now."""

    days = fields.List(fields.Nested(BalanceDaySchema), required=True)


class UsageDaySchema(Schema):
    day = fields.String(required=True, metadata={"description": "YYYY-MM-DD (UTC)"})
    requests = fields.Integer(
        required=True, metadata={"description": "Generations served to the user's requests: chat and text, both APIs"}
    )
    tokens = fields.Integer(required=True, metadata={"description": "Tokens generated for them"})
    kudos_spent = fields.Integer(required=True, metadata={"description": "Kudos its requests were charged"})
    kudos_earned = fields.Integer(required=True, metadata={"description": "Kudos its workers earned"})


class UsageSchema(Schema):
    """The user's usage per day of the window, oldest first."""

    days = fields.List(fields.Nested(UsageDaySchema), required=True)


class ConsoleWorkerSchema(WorkerDetailSchema):
    """A worker as GET /workers/{id} shows it to its owner, with the console's plain names for its figures."""

    speed = fields.String(required=True, metadata={"description": "Its performance string (tokens per second)"})
    jobs = fields.Integer(required=True, metadata={"description": "Generations fulfilled (requests_fulfilled)"})
    kudos_earned = fields.Integer(required=True, metadata={"description": "Kudos earned (kudos_rewards)"})
    maintenance_msg = fields.String(required=True, allow_none=True, metadata={"description": "Its owner's message"})


class SeriesValuesSchema(Schema):
    """One value per minute from `start`, null where unknown."""

    requests = fields.List(fields.Integer(allow_none=True), required=True)
    tokens = fields.List(fields.Integer(allow_none=True), required=True)
    queued = fields.List(fields.Integer(allow_none=True), required=True)
    workers = fields.List(fields.Integer(allow_none=True), required=True)


class SeriesSchema(Schema):
    """The Horde's figures minute by minute (the Status page's charts)."""

    start = fields.String(required=True, metadata={"description": "The first minute, ISO 8601, UTC (Z)"})
    step_s = fields.Integer(required=True, metadata={"description": "Seconds between two values: 60"})
    models = fields.List(fields.String(), required=True, metadata={"description": "The models seen in the window"})
    series = fields.Nested(SeriesValuesSchema, required=True)
