"""Native client routes: async, status, cancel, and the model status list."""

from collections.abc import Callable

from flask import request as http_request
from flask_restx import Namespace, Resource

from horde import errors
from horde.accounts.auth import authenticate
from horde.chat import service, stats
from horde.chat.cards import model_stats
from horde.chat.schemas import (
    CHAT_REQUEST_SCHEMA,
    ChatAsyncAnswerSchema,
    ChatStatusSchema,
    ModelStatusSchema,
    TotalsSchema,
)
from horde.http.client_address import client_address
from horde.http.request_context import api_key, json_body, runtime
from horde.http.swagger import body_model
from horde.observability.metrics import count_client_request
from horde.observability.record import note

namespace = Namespace("chat", description="Chat requests")
APIKEY_HEADER = {"apikey": {"in": "header", "description": "API key; 0000000000 or none is anonymous"}}
chat_request_model = body_model(namespace, "ChatRequest", CHAT_REQUEST_SCHEMA)
async_answer_model = body_model(namespace, "ChatAsyncAnswer", ChatAsyncAnswerSchema)
status_model = body_model(namespace, "ChatStatus", ChatStatusSchema)


@namespace.route("/async")
class Async(Resource):
    @namespace.doc(params=APIKEY_HEADER)
    @namespace.expect(chat_request_model)
    @namespace.response(202, "Queued", async_answer_model)
    def post(self) -> tuple[dict, int]:
        """Queue a chat request; answers 202 with its id and kudos estimate."""
        hub = runtime()
        user = authenticate(hub, api_key())
        agent = http_request.headers.get("Client-Agent", "unknown:0:unknown")
        address = client_address(http_request.environ, hub.settings.trusted_proxy_hops)
        request = service.create(hub, user, json_body(), client_agent=agent, client_address=address)
        note(chat_request=request.id)
        count_client_request(agent, "chat")
        return {"id": request.id, "kudos": request.kudos_estimate}, 202


@namespace.route("/status/<string:request_id>")
class Status(Resource):
    @namespace.doc(params=APIKEY_HEADER)
    @namespace.response(200, "The request", status_model)
    def get(self, request_id: str) -> dict:
        """State, queue position, wait estimate, worker, reply, progress, kudos and adjustments."""
        hub = runtime()
        note(chat_request=request_id)
        return service.status(hub, authenticate(hub, api_key()), request_id)

    @namespace.doc(params=APIKEY_HEADER)
    @namespace.response(200, "The request, cancelled", status_model)
    def delete(self, request_id: str) -> dict:
        """Cancel the request."""
        hub = runtime()
        note(chat_request=request_id)
        user = authenticate(hub, api_key())
        service.cancel(hub, user, request_id)
        return service.status(hub, user, request_id)


status_namespace = Namespace("status", description="Horde status")
model_status_model = body_model(status_namespace, "ModelStatus", ModelStatusSchema)
#: /status/models?type=<kind> for the other kinds of work, registered by their packages (text: horde/text/routes.py).
OTHER_MODEL_TYPES: dict[str, Callable[[], list[dict]]] = {}
#: The `type` of /status/models: the AI Horde's (image is its default; this Horde has none, nor interrogation) and
#: this Horde's own `chat`, which the AI Horde's clients never ask for (horde-sdk refuses an entry of that type).
MODEL_TYPES = ("image", "text", "interrogation", "chat")
AI_HORDE_DEFAULT_MODEL_TYPE = "image"
MODEL_TYPE_PARAM = {
    "type": {
        "in": "query",
        "description": "'text', 'chat' (this Horde's chat models) or 'image' (the AI Horde's default)",
    }
}


def model_type(raw: str | None, default: str | None) -> str | None:
    """The `type` query parameter of the model status, or `default`; another value is 400 BadRequest."""
    kind = raw or default
    if kind is not None and kind not in MODEL_TYPES:
        raise errors.BadRequest(
            f"Unknown model type '{kind}'; the types are {', '.join(repr(name) for name in MODEL_TYPES)}.",
            param="type",
        )
    return kind


@status_namespace.route("/models")
class Models(Resource):
    @status_namespace.doc(params=MODEL_TYPE_PARAM)
    @status_namespace.response(200, "One entry per model", [model_status_model])
    def get(self) -> list[dict]:
        """Per model: online workers, threads, queued requests, largest lengths; chat's features and guarantees."""
        kind = model_type(http_request.args.get("type"), default=AI_HORDE_DEFAULT_MODEL_TYPE)
        if kind in OTHER_MODEL_TYPES:
            return OTHER_MODEL_TYPES[kind]()
        if kind != "chat":
            return []
        hub = runtime()
        with hub.db.read() as session:
            return model_stats(session, hub.settings)


stats_namespace = Namespace("stats", description="Horde statistics")
totals_model = body_model(stats_namespace, "ChatTotals", TotalsSchema)


@stats_namespace.route("/totals")
class Totals(Resource):
    @stats_namespace.response(200, "Counts per period", totals_model)
    def get(self) -> dict:
        """Chat requests served and tokens generated: last minute, hour, day, month, and in total."""
        hub = runtime()
        with hub.db.read() as session:
            return stats.totals(session)
