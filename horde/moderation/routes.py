"""The moderation routes, thin over their services: /users/{id} (GET, PUT, DELETE), /kudos/award, /status/modes
(GET, PUT), /operations/ipaddr, /operations/ipaddr/{ipaddr}, /operations/block_worker_ipaddr/{worker_id} and
/operations/audit. Each checks the caller against the authorization table (horde/authz/rules.py) before its
service writes anything.

A route's resource is declared on the namespace of its path (the users', kudos' and status namespaces of the
domains below, whose routes for the same paths live here: one resource per path)."""

from __future__ import annotations

from flask import request as http_request
from flask_restx import Namespace, Resource
from marshmallow import Schema

from horde import errors
from horde.accounts import names
from horde.accounts.auth import authenticate
from horde.accounts.identity import Identity
from horde.accounts.routes import kudos_namespace
from horde.authz.check import authorize, may
from horde.authz.rules import Action
from horde.chat.routes import status_namespace
from horde.http.payload import load
from horde.http.request_context import api_key, json_body, runtime
from horde.http.swagger import body_model
from horde.moderation import awards, deletion, modes, timeouts, users
from horde.moderation.schemas import (
    ADD_TIMEOUT_SCHEMA,
    AWARD_SCHEMA,
    BLOCK_WORKER_SCHEMA,
    MODES_INPUT_SCHEMA,
    MODIFY_USER_SCHEMA,
    REMOVE_TIMEOUT_SCHEMA,
    AuditPageSchema,
    AwardedSchema,
    ModesSchema,
    ModifiedUserSchema,
    SimpleResponseSchema,
    TimeoutSchema,
)
from horde.oversight import trail
from horde.oversight.models import MAX_REASON_CHARS
from horde.oversight.trail import Actor
from horde.users import details
from horde.users.routes import user_model, users_namespace

operations_namespace = Namespace("operations", description="Moderators' operations: IP timeouts, the audit trail")
KEY_HEADER = {"apikey": {"in": "header", "description": "A moderator's (or admin's) own API key", "required": True}}
REASON_PARAM = {"reason": {"in": "query", "description": "Why: kept in the audit trail (this Horde's addition)"}}
modify_user_model = body_model(users_namespace, "ModifyUserInput", MODIFY_USER_SCHEMA)
modified_user_model = body_model(users_namespace, "ModifyUser", ModifiedUserSchema)
users_simple_model = body_model(users_namespace, "SimpleResponse", SimpleResponseSchema)
modes_input_model = body_model(status_namespace, "HordeModesInput", MODES_INPUT_SCHEMA)
modes_model = body_model(status_namespace, "HordeModes", ModesSchema)
award_model = body_model(kudos_namespace, "KudosAwardInput", AWARD_SCHEMA)
awarded_model = body_model(kudos_namespace, "KudosAwarded", AwardedSchema)
add_timeout_model = body_model(operations_namespace, "AddTimeoutIPAddressInput", ADD_TIMEOUT_SCHEMA)
remove_timeout_model = body_model(operations_namespace, "DeleteTimeoutIPAddressInput", REMOVE_TIMEOUT_SCHEMA)
timeout_model = body_model(operations_namespace, "IPTimeout", TimeoutSchema)
block_worker_model = body_model(operations_namespace, "AddWorkerTimeout", BLOCK_WORKER_SCHEMA)
operations_simple_model = body_model(operations_namespace, "SimpleResponse", SimpleResponseSchema)
audit_page_model = body_model(operations_namespace, "AuditPage", AuditPageSchema)


def _caller() -> Identity:
    hub = runtime()
    return authenticate(hub, api_key())


def _authorized(action: Action, schema: Schema) -> tuple[Actor, dict]:
    """The caller, as the trail names it, once the table lets it take `action`; and the body loaded with `schema`."""
    caller = _caller()
    authorize(caller, action)
    return Actor.of(caller), load(schema, json_body())


def _query_reason() -> str | None:
    """A DELETE's reason: the query parameter `reason` (a DELETE may have no body)."""
    reason = http_request.args.get("reason") or None
    return reason[:MAX_REASON_CHARS] if reason else None


@users_namespace.route("/<string:user_id>")
class UserSingle(Resource):
    @users_namespace.doc(
        params={"apikey": {"in": "header", "description": "The user's own key for its own view; a moderator's"}}
    )
    @users_namespace.response(
        200, "The user: its own view with its own key, a moderator's with a moderator's, else the public", user_model
    )
    def get(self, user_id: str) -> dict:
        """A user's details, by the number of its `name#id`; a moderator also sees a deleted user."""
        public = users.public_id_of(user_id)
        hub = runtime()
        key = api_key()
        caller = authenticate(hub, key) if key else None
        moderator = caller is not None and may(caller, Action.MODERATOR_VIEW)
        with hub.db.read() as session:
            user = names.by_public_id(session, public, deleted=moderator)
            if user is None:
                raise errors.UserNotFound(f"User with ID '{user_id}' not found.", param="user_id")
            own = caller is not None and caller.id == user.id and caller.shared_key_id is None
            return details.find(session, user.id, own=own, moderator=moderator)

    @users_namespace.doc(params=KEY_HEADER)
    @users_namespace.expect(modify_user_model)
    @users_namespace.response(200, "The fields set, with their new values", modified_user_model)
    def put(self, user_id: str) -> dict:
        """Change a user: moderators (kudos, usage_multiplier, moderator: admins; username, contact,
        public_workers: also the user themself)."""
        return users.modify(runtime(), _caller(), user_id, json_body())

    @users_namespace.doc(params=KEY_HEADER | REASON_PARAM)
    @users_namespace.response(200, "Deleted", users_simple_model)
    def delete(self, user_id: str) -> dict:
        """Delete a user: the user themself or an admin. Its keys stop working at once, its workers and shared keys
        are deleted, its open requests cancelled; its ledger entries stay."""
        return deletion.delete_user(runtime(), _caller(), user_id, _query_reason())


@kudos_namespace.route("/award")
class Award(Resource):
    @kudos_namespace.doc(params=KEY_HEADER)
    @kudos_namespace.expect(award_model)
    @kudos_namespace.response(200, "Awarded", awarded_model)
    def post(self) -> dict:
        """Award kudos to a user (moderators): one ledger entry."""
        actor, body = _authorized(Action.AWARD_KUDOS, AWARD_SCHEMA)
        awarded = awards.award(runtime(), actor, body["username"], body["amount"], body.get("reason"))
        return {"awarded": float(awarded)}


@status_namespace.route("/modes")
class Modes(Resource):
    @status_namespace.doc(params={"apikey": {"in": "header", "description": "A moderator's key shows raid mode"}})
    @status_namespace.response(200, "The Horde's modes", modes_model)
    def get(self) -> dict:
        """Maintenance and invite-only modes; raid mode too, with a moderator's key (another user's key: 403)."""
        hub = runtime()
        key = api_key()
        moderator = False
        if key:
            authorize(authenticate(hub, key), Action.MODERATOR_VIEW)
            moderator = True
        return modes.shown(hub.oversight.current().modes, moderator=moderator)

    @status_namespace.doc(params=KEY_HEADER)
    @status_namespace.expect(modes_input_model)
    @status_namespace.response(200, "The modes set, with their new values", modes_model)
    def put(self) -> dict:
        """Set the Horde's modes (admins)."""
        actor, body = _authorized(Action.SET_MODES, MODES_INPUT_SCHEMA)
        return modes.set_modes(runtime(), actor, body, body.get("reason"))


@operations_namespace.route("/ipaddr")
class Timeouts(Resource):
    @operations_namespace.doc(params=KEY_HEADER)
    @operations_namespace.response(200, "Every address and network in timeout", [timeout_model])
    def get(self) -> list[dict]:
        authorize(_caller(), Action.TIME_OUT_ADDRESS)
        return timeouts.listing(runtime())

    @operations_namespace.doc(params=KEY_HEADER)
    @operations_namespace.expect(add_timeout_model)
    @operations_namespace.response(200, "In timeout", operations_simple_model)
    def post(self) -> dict:
        """Put an address or a network (CIDR) in timeout for some hours (moderators)."""
        actor, body = _authorized(Action.TIME_OUT_ADDRESS, ADD_TIMEOUT_SCHEMA)
        timeouts.time_out(runtime(), actor, body["ipaddr"], body["hours"], body.get("reason"))
        return {"message": "OK"}

    @operations_namespace.doc(params=KEY_HEADER)
    @operations_namespace.expect(remove_timeout_model)
    @operations_namespace.response(200, "Out of timeout", operations_simple_model)
    def delete(self) -> dict:
        """Lift the timeout of an address or a network (moderators)."""
        actor, body = _authorized(Action.TIME_OUT_ADDRESS, REMOVE_TIMEOUT_SCHEMA)
        timeouts.lift(runtime(), actor, body["ipaddr"], body.get("reason"))
        return {"message": "OK"}


@operations_namespace.route("/ipaddr/<path:ipaddr>")
class TimeoutsOf(Resource):
    @operations_namespace.doc(params=KEY_HEADER)
    @operations_namespace.response(200, "The timeouts covering the address or network", [timeout_model])
    def get(self, ipaddr: str) -> list[dict]:
        authorize(_caller(), Action.TIME_OUT_ADDRESS)
        return timeouts.matching(runtime(), ipaddr)


@operations_namespace.route("/block_worker_ipaddr/<string:worker_id>")
class WorkerAddress(Resource):
    @operations_namespace.doc(params=KEY_HEADER)
    @operations_namespace.expect(block_worker_model)
    @operations_namespace.response(200, "Blocked", operations_simple_model)
    def put(self, worker_id: str) -> dict:
        """Time out the address the worker last checked in from (IPv6: its /64) for some days (moderators)."""
        actor, body = _authorized(Action.BLOCK_WORKER_ADDRESS, BLOCK_WORKER_SCHEMA)
        timeouts.block_worker(runtime(), actor, worker_id, body["days"], body.get("reason"))
        return {"message": "OK"}

    @operations_namespace.doc(params=KEY_HEADER | REASON_PARAM)
    @operations_namespace.response(200, "Unblocked", operations_simple_model)
    def delete(self, worker_id: str) -> dict:
        """Lift the block of the worker's address (moderators)."""
        caller = _caller()
        authorize(caller, Action.BLOCK_WORKER_ADDRESS)
        timeouts.unblock_worker(runtime(), Actor.of(caller), worker_id, _query_reason())
        return {"message": "OK"}


@operations_namespace.route("/audit")
class Audit(Resource):
    @operations_namespace.doc(
        params=KEY_HEADER
        | {
            "before": {"in": "query", "type": "integer", "description": "Entries older than this id (the next page)"},
            "limit": {"in": "query", "type": "integer", "description": f"1 to {trail.MAX_PAGE}; 50 by default"},
            "target_kind": {"in": "query", "description": "user, worker, address or modes"},
            "target": {"in": "query", "description": "A user's id, a worker's id, a network, horde"},
            "actor_id": {"in": "query", "type": "integer", "description": "The moderator's user id"},
            "action": {"in": "query", "description": "modify_user, delete_user, award_kudos, set_modes, ..."},
        }
    )
    @operations_namespace.response(200, "The latest entries first", audit_page_model)
    def get(self) -> dict:
        """The audit trail (moderators), a page at a time."""
        authorize(_caller(), Action.READ_AUDIT)
        args = http_request.args
        limit = _whole(args.get("limit"), "limit", trail.DEFAULT_PAGE) or trail.DEFAULT_PAGE
        with runtime().db.read() as session:
            entries = trail.page(
                session,
                before_id=_whole(args.get("before"), "before", None),
                limit=limit,
                target_kind=_text(args.get("target_kind"), "target_kind"),
                target=_text(args.get("target"), "target"),
                actor_id=_whole(args.get("actor_id"), "actor_id", None),
                action=_text(args.get("action"), "action"),
            )
        full = len(entries) == max(1, min(limit, trail.MAX_PAGE))
        return {"entries": entries, "next_before": entries[-1]["id"] if entries and full else None}


#: A query parameter's text, bounded like the column it filters.
MAX_FILTER_CHARS = 160
#: A whole number in a query: at most the digits of a 64-bit integer.
MAX_WHOLE_DIGITS = 18


def _whole(raw: str | None, name: str, default: int | None) -> int | None:
    if raw is None or raw == "":
        return default
    if not (raw.isascii() and raw.isdecimal()) or len(raw) > MAX_WHOLE_DIGITS:
        raise errors.BadRequest(f"Invalid '{name}': a whole number.", param=name)
    return int(raw)


def _text(raw: str | None, name: str) -> str | None:
    if raw is None or raw == "":
        return None
    if len(raw) > MAX_FILTER_CHARS:
        raise errors.BadRequest(f"Invalid '{name}': at most {MAX_FILTER_CHARS} characters.", param=name)
    return raw
