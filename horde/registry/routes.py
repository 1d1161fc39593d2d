"""GET /workers, /workers/{id}, /status/models/{name} and /status/heartbeat: the Horde's public registry."""

from __future__ import annotations

from flask import request as http_request
from flask_restx import Namespace, Resource

from horde import errors
from horde.chat.cards import model_stats
from horde.chat.routes import model_status_model, status_namespace
from horde.registry import views
from horde.registry.schemas import HeartbeatSchema, WorkerDetailSchema
from horde.request_context import runtime
from horde.swagger import body_model
from horde.text import stats as text_stats
from horde.workers.models import Worker

namespace = Namespace("registry", description="Workers, as the AI Horde lists them")
HORDE_API_VERSION = "2.0.0"
worker_model = body_model(namespace, "WorkerDetail", WorkerDetailSchema)
heartbeat_model = body_model(status_namespace, "Heartbeat", HeartbeatSchema)


@namespace.route("")
class Workers(Resource):
    @namespace.doc(params={"type": {"in": "query", "description": "'text' or 'chat'; none lists every worker"}})
    @namespace.response(200, "The workers", [worker_model])
    def get(self) -> list[dict]:
        """Every worker that ever popped, with its declarations and work done."""
        kind = http_request.args.get("type") or None
        if kind not in (None, *views.KINDS):
            if kind in ("image", "interrogation"):
                return []
            raise errors.BadRequest(
                f"Unknown worker type '{kind}'; this Horde has 'text' and 'chat' workers.", param="type"
            )
        hub = runtime()
        with hub.db.read() as session:
            return views.listing(session, hub.settings, kind)


@namespace.route("/<string:worker_id>")
class OneWorker(Resource):
    @namespace.response(200, "The worker", worker_model)
    def get(self, worker_id: str) -> dict:
        hub = runtime()
        with hub.db.read() as session:
            worker = session.get(Worker, worker_id)
            if worker is None:
                raise errors.WorkerNotFound(f"No worker with id '{worker_id}'.")
            return views.one(session, hub.settings, worker)


@status_namespace.route("/models/<path:model_name>")
class OneModel(Resource):
    @status_namespace.response(200, "One entry per kind of worker serving it", [model_status_model])
    def get(self, model_name: str) -> list[dict]:
        """The model's entries: one per kind of worker (text, chat) serving it; [] when none does."""
        hub = runtime()
        with hub.db.read() as session:
            return text_stats.model_status(session, hub.settings, model_name) + model_stats(
                session, hub.settings, model_name
            )


@status_namespace.route("/heartbeat")
class Heartbeat(Resource):
    @status_namespace.response(200, "Alive", heartbeat_model)
    def get(self) -> dict:
        """Liveness: the process answers."""
        return {"message": "OK", "version": HORDE_API_VERSION}
