"""GET /workers, /workers/{id}, /workers/name/{name}; PUT and DELETE /workers/{id}: the Horde's workers."""

from __future__ import annotations

from flask import request as http_request
from flask_restx import Namespace, Resource
from sqlalchemy import select

from horde import errors
from horde.accounts.auth import authenticate
from horde.authz.check import may
from horde.authz.rules import Action
from horde.http.request_context import api_key, json_body, runtime
from horde.http.swagger import body_model
from horde.oversight.models import MAX_REASON_CHARS
from horde.registry import manage, views
from horde.registry.schemas import (
    MODIFY_WORKER_SCHEMA,
    DeletedWorkerSchema,
    ModifyWorkerAnswerSchema,
    WorkerDetailSchema,
)
from horde.workers.models import Worker

namespace = Namespace("registry", description="Workers, as the AI Horde lists them")
OWNER_APIKEY_HEADER = {"apikey": {"in": "header", "description": "The worker owner's API key", "required": True}}
worker_model = body_model(namespace, "WorkerDetail", WorkerDetailSchema)
modify_model = body_model(namespace, "ModifyWorkerInput", MODIFY_WORKER_SCHEMA)
modify_answer_model = body_model(namespace, "ModifyWorker", ModifyWorkerAnswerSchema)
deleted_model = body_model(namespace, "DeletedWorker", DeletedWorkerSchema)


@namespace.route("")
class Workers(Resource):
    @namespace.doc(
        params={"type": {"in": "query", "description": "'text' (what no type lists) or 'chat'; image: none"}}
    )
    @namespace.response(200, "The workers", [worker_model])
    def get(self) -> list[dict]:
        """Every worker that ever popped the kind asked for, with its declarations and work done."""
        kind = http_request.args.get("type") or None
        if kind not in (None, *views.KINDS):
            if kind in ("image", "interrogation"):
                return []
            raise errors.BadRequest(
                f"Unknown worker type '{kind}'; this Horde has 'text' and 'chat' workers.", param="type"
            )
        hub = runtime()
        viewer = _viewer(hub)
        with hub.db.read() as session:
            return views.listing(session, hub.settings, kind, viewer)


@namespace.route("/<string:worker_id>")
class OneWorker(Resource):
    @namespace.response(200, "The worker", worker_model)
    def get(self, worker_id: str) -> dict:
        hub = runtime()
        viewer = _viewer(hub)
        with hub.db.read() as session:
            return views.one(session, hub.settings, manage.live_worker(session, worker_id), viewer)

    @namespace.doc(params=OWNER_APIKEY_HEADER)
    @namespace.expect(modify_model)
    @namespace.response(200, "The fields changed, with their new values", modify_answer_model)
    def put(self, worker_id: str) -> dict:
        """Maintenance on or off (with its message), info, name, team: by the worker's owner or a moderator; paused:
        by a moderator."""
        hub = runtime()
        return manage.modify(hub, authenticate(hub, api_key()), worker_id, json_body())

    @namespace.doc(params=OWNER_APIKEY_HEADER)
    @namespace.response(200, "Deleted", deleted_model)
    def delete(self, worker_id: str) -> dict:
        """Delete the worker, by its owner or a moderator; its running jobs end as expired ones, with no reward."""
        hub = runtime()
        return manage.delete(hub, authenticate(hub, api_key()), worker_id, _reason())


@namespace.route("/name/<path:worker_name>")
class WorkerByName(Resource):
    @namespace.response(200, "The worker", worker_model)
    def get(self, worker_name: str) -> dict:
        hub = runtime()
        with hub.db.read() as session:
            worker = session.scalar(select(Worker).where(Worker.name == worker_name, Worker.deleted_at.is_(None)))
            if worker is None:
                raise errors.WorkerNotFound(f"No worker named '{worker_name}'.")
            return views.one(session, hub.settings, worker, _viewer(hub))


def _viewer(hub) -> views.Viewer:
    """Who asks, by the call's key (none: the public): a moderator's own key sees what only moderators see."""
    key = api_key()
    if not key:
        return views.PUBLIC
    caller = authenticate(hub, key)
    own = None if caller.anonymous or caller.shared_key_id else caller.id
    return views.Viewer(user_id=own, moderator=may(caller, Action.MODERATOR_VIEW))


def _reason() -> str | None:
    """A moderator's reason for a DELETE, from the optional query parameter `reason` (a DELETE has no body)."""
    reason = http_request.args.get("reason") or None
    return reason[:MAX_REASON_CHARS] if reason else None
