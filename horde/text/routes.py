"""The text API's routes under /api/v2, with the AI Horde's paths. Thin: each calls one service."""

from __future__ import annotations

from flask import request as http_request
from flask_restx import Namespace, Resource

from horde.accounts.auth import authenticate
from horde.chat.routes import OTHER_MODEL_TYPES
from horde.chat.schemas import TotalsSchema
from horde.http.client_address import client_address
from horde.http.request_context import api_key, json_body, raw_body, runtime
from horde.http.swagger import body_model
from horde.observability.metrics import count_client_request
from horde.text import pop, service, stats
from horde.text.schemas import (
    GENERATION_INPUT_SCHEMA,
    POP_SCHEMA,
    SUBMIT_SCHEMA,
    AsyncAnswerSchema,
    PerModelSchema,
    PopAnswerSchema,
    StatusSchema,
    SubmitAnswerSchema,
)

namespace = Namespace("text", description="The AI Horde's text generation API")
stats_namespace = Namespace("text_stats", description="Text generation statistics")
APIKEY_HEADER = {"apikey": {"in": "header", "description": "API key; 0000000000 or none is anonymous"}}
WORKER_APIKEY_HEADER = {"apikey": {"in": "header", "description": "The worker owner's API key", "required": True}}
request_model = body_model(namespace, "TextRequest", GENERATION_INPUT_SCHEMA)
async_answer_model = body_model(namespace, "TextAsyncAnswer", AsyncAnswerSchema)
status_model = body_model(namespace, "TextStatus", StatusSchema)
pop_model = body_model(namespace, "TextPop", POP_SCHEMA)
pop_answer_model = body_model(namespace, "TextPopAnswer", PopAnswerSchema)
submit_model = body_model(namespace, "TextSubmit", SUBMIT_SCHEMA)
submit_answer_model = body_model(namespace, "TextSubmitAnswer", SubmitAnswerSchema)
totals_model = body_model(stats_namespace, "TextTotals", TotalsSchema)
per_model_model = body_model(stats_namespace, "TextPerModel", PerModelSchema)


@namespace.route("/async")
class Async(Resource):
    @namespace.doc(params=APIKEY_HEADER)
    @namespace.expect(request_model)
    @namespace.response(202, "Queued", async_answer_model)
    @namespace.response(200, "Priced only (dry_run)", async_answer_model)
    def post(self) -> tuple[dict, int] | dict:
        """Queue a text request (202 {id, kudos}); with dry_run, only price it (200 {kudos})."""
        hub = runtime()
        user = authenticate(hub, api_key())
        agent = http_request.headers.get("Client-Agent", "unknown:0:unknown")
        address = client_address(http_request.environ, hub.settings.trusted_proxy_hops)
        admitted = service.create(hub, user, json_body(), client_agent=agent, client_address=address)
        answer: dict = {"kudos": admitted.kudos}
        if admitted.request is None:
            return answer, 200
        count_client_request(agent, "text")
        answer = {"id": admitted.request.id, **answer}
        if admitted.message:
            answer["message"] = admitted.message
        if admitted.warnings:
            answer["warnings"] = admitted.warnings
        return answer, 202


@namespace.route("/status/<string:request_id>")
class Status(Resource):
    @namespace.response(200, "The request", status_model)
    def get(self, request_id: str) -> dict:
        """Counts by stage, the wait, and every generation so far."""
        return service.status(runtime(), request_id)

    @namespace.response(200, "The request as it stood before the cancel", status_model)
    def delete(self, request_id: str) -> dict:
        """Hand out no more generations; those running finish and are kept. Answers the status as it stood
        before the cancel (`done` false for a request that had not finished), as the AI Horde does."""
        hub = runtime()
        before = service.status(hub, request_id)
        service.cancel(hub, request_id)
        return before


@namespace.route("/pop")
class Pop(Resource):
    @namespace.doc(params=WORKER_APIKEY_HEADER)
    @namespace.expect(pop_model)
    @namespace.response(200, "Generations, or none and why", pop_answer_model)
    def post(self) -> tuple[dict, int] | dict:
        """Check in and take up to `amount` generations of one request, within the worker's free threads."""
        return pop.pop(runtime(), api_key(), raw_body())


@namespace.route("/submit")
class Submit(Resource):
    @namespace.doc(params=WORKER_APIKEY_HEADER)
    @namespace.expect(submit_model)
    @namespace.response(200, "Accepted", submit_answer_model)
    def post(self) -> tuple[dict, int] | dict:
        """Submit one generation; answers the kudos rewarded."""
        return service.submit(runtime(), api_key(), json_body())


@stats_namespace.route("/totals")
class Totals(Resource):
    @stats_namespace.response(200, "Counts per period", totals_model)
    def get(self) -> dict:
        """Generations and tokens in the past minute, hour, day, month and in total."""
        hub = runtime()
        with hub.db.read() as session:
            return stats.totals(session)


@stats_namespace.route("/models")
class PerModel(Resource):
    @stats_namespace.response(200, "Generations per model", per_model_model)
    def get(self) -> dict:
        """Generations per model in the past day, month and in total."""
        hub = runtime()
        with hub.db.read() as session:
            return stats.per_model(session)


def text_models() -> list[dict]:
    """/status/models?type=text."""
    hub = runtime()
    with hub.db.read() as session:
        return stats.model_status(session, hub.settings)


OTHER_MODEL_TYPES["text"] = text_models
