"""The account console's routes, thin over their services: a user's ledger, balance history, usage and workers
(/users/{id}/...: the user's own key or a moderator's), and the Status page's series by minute (/stats/series:
anyone)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flask import request as http_request
from flask_restx import Namespace, Resource
from sqlalchemy.orm import Session

from horde import errors
from horde.accounts.auth import authenticate
from horde.accounts.identity import Identity
from horde.authz.check import may
from horde.authz.rules import Action
from horde.console import access, ledger, params, series, usage
from horde.console import workers as console_workers
from horde.console.schemas import (
    BalanceHistorySchema,
    ConsoleWorkerSchema,
    LedgerPageSchema,
    SeriesSchema,
    UsageSchema,
)
from horde.http.request_context import api_key, runtime
from horde.http.request_json import is_storable
from horde.http.swagger import body_model
from horde.registry import views

account_namespace = Namespace("console", description="A user's account, for its console: own key or a moderator's")
series_namespace = Namespace("series", description="The Horde's figures minute by minute, for the Status charts")
OWN_KEY = {"apikey": {"in": "header", "description": "The user's own API key, or a moderator's", "required": True}}
DAYS = {"days": {"in": "query", "type": "integer", "description": f"1 to {ledger.MAX_DAYS}; 30 when absent"}}
ledger_model = body_model(account_namespace, "LedgerPage", LedgerPageSchema)
history_model = body_model(account_namespace, "BalanceHistory", BalanceHistorySchema)
worker_model = body_model(account_namespace, "ConsoleWorker", ConsoleWorkerSchema)
usage_model = body_model(account_namespace, "UsageByDay", UsageSchema)
series_model = body_model(series_namespace, "Series", SeriesSchema)
DEFAULT_DAYS = 30


def _read_account(user_id: str, read: Callable[[Any, Session, int, Identity], Any]) -> Any:
    """`read(hub, session, user's id, caller)` of the account of `user_id`, once the caller may read it."""
    hub = runtime()
    caller = authenticate(hub, api_key())
    with hub.db.read() as session:
        user = access.readable_user(session, caller, user_id)
        return read(hub, session, user.id, caller)


def _days() -> int:
    return params.bounded(http_request.args, "days", DEFAULT_DAYS, 1, ledger.MAX_DAYS)


@account_namespace.route("/<string:user_id>/ledger")
class Ledger(Resource):
    @account_namespace.doc(
        params={
            **OWN_KEY,
            "limit": {"in": "query", "type": "integer", "description": f"1 to {ledger.MAX_LIMIT}; 50 when absent"},
            "cursor": {"in": "query", "description": "The previous page's next_cursor; none: the newest entries"},
        }
    )
    @account_namespace.response(200, "A page of the ledger, newest first, each entry with its balance", ledger_model)
    def get(self, user_id: str) -> dict:
        """The user's kudos ledger, a page at a time (keyset), with the exact balance after each entry."""
        limit = params.bounded(http_request.args, "limit", ledger.DEFAULT_LIMIT, 1, ledger.MAX_LIMIT)
        raw_cursor = http_request.args.get("cursor") or None
        return _read_account(
            user_id,
            lambda hub, session, owner, _caller: ledger.page(
                session, ledger.Secret(hub.db, hub.settings.secret_key), owner, limit, raw_cursor
            ),
        )


@account_namespace.route("/<string:user_id>/balance_history")
class BalanceHistory(Resource):
    @account_namespace.doc(params={**OWN_KEY, **DAYS})
    @account_namespace.response(200, "The closing balance of each day, oldest first", history_model)
    def get(self, user_id: str) -> dict:
        """The user's balance at the end of each UTC day of the window; the last day's is the balance now."""
        days = _days()
        return _read_account(
            user_id, lambda _hub, session, owner, _caller: ledger.balance_history(session, owner, days)
        )


@account_namespace.route("/<string:user_id>/usage")
class Usage(Resource):
    @account_namespace.doc(params={**OWN_KEY, **DAYS})
    @account_namespace.response(200, "The user's usage per day, oldest first", usage_model)
    def get(self, user_id: str) -> dict:
        """Generations served to the user's requests per UTC day (chat and text, both APIs), their tokens, and the
        kudos its requests were charged and its workers earned."""
        days = _days()
        return _read_account(user_id, lambda _hub, session, owner, _caller: usage.by_day(session, owner, days))


@account_namespace.route("/<string:user_id>/workers")
class UserWorkers(Resource):
    @account_namespace.doc(params=OWN_KEY)
    @account_namespace.response(200, "The user's workers, by name", [worker_model])
    def get(self, user_id: str) -> list[dict]:
        """The user's workers as GET /workers/{id} shows them to their owner, with speed, jobs and kudos earned."""
        return _read_account(user_id, _workers)


def _workers(hub: Any, session: Session, owner: int, caller: Identity) -> list[dict]:
    viewer = views.Viewer(user_id=caller.id, moderator=may(caller, Action.MODERATOR_VIEW))
    return console_workers.of_user(session, hub.settings, owner, viewer)


@series_namespace.route("/series")
class Series(Resource):
    @series_namespace.doc(
        params={
            "minutes": {
                "in": "query",
                "type": "integer",
                "description": f"{series.MIN_MINUTES} to {series.MAX_MINUTES}; {series.MAX_MINUTES} when absent",
            },
            "model": {"in": "query", "description": "One model's figures; none: every model together"},
        }
    )
    @series_namespace.response(200, "One value per minute of each series, the oldest first", series_model)
    def get(self) -> dict:
        """Generations served, tokens, the queue and the workers online, minute by minute up to now."""
        minutes = params.bounded(
            http_request.args, "minutes", series.MAX_MINUTES, series.MIN_MINUTES, series.MAX_MINUTES
        )
        model = http_request.args.get("model") or None
        if model is not None and (len(model) > series.MAX_MODEL_CHARS or not is_storable(model)):
            raise errors.BadRequest(
                f"Invalid 'model': a model's name of at most {series.MAX_MODEL_CHARS} characters.", param="model"
            )
        with runtime().db.read() as session:
            return series.series(session, minutes, model)
