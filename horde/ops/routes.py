"""Wires the operator parts into the app: CORS, the request observer, GET /metrics."""

from __future__ import annotations

import hmac
import json

from flask import Blueprint, Flask, Response, request

from horde import errors
from horde.config import Settings
from horde.http.request_context import runtime as current_runtime
from horde.observability.metrics import metrics
from horde.observability.observer import RequestObserver, note_route
from horde.ops import cors
from horde.ops.gauges import DatabaseCollector

METRICS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def install(app: Flask, settings: Settings) -> None:
    @app.before_request
    def _note_route():
        note_route(request.environ, request.url_rule.rule if request.url_rule is not None else None)

    cors.install(app, settings.cors_origins, settings.oai_prefix)
    app.wsgi_app = RequestObserver(app.wsgi_app, metrics(), settings.log_format)  # type: ignore[method-assign]

    app.register_blueprint(_metrics_blueprint())


def _metrics_blueprint() -> Blueprint:
    blueprint = Blueprint("ops", __name__)

    @blueprint.get("/metrics")
    def scrape():
        runtime = current_runtime()
        refusal = _refusal(runtime.settings.metrics_token)
        if refusal is not None:
            return refusal
        body = metrics().exposition([DatabaseCollector(runtime)])
        return Response(body, content_type=METRICS_CONTENT_TYPE)

    return blueprint


def _refusal(token: str | None) -> Response | None:
    """With HORDE_METRICS_TOKEN set, a scrape must send it as a Bearer token."""
    if token is None:
        return None
    sent = request.headers.get("Authorization", "")
    if sent.startswith("Bearer ") and hmac.compare_digest(sent[len("Bearer ") :].encode(), token.encode()):
        return None
    error = errors.InvalidAPIKey("GET /metrics needs the metrics token as `Authorization: Bearer <token>`.")
    response = Response(json.dumps(error.to_native()), status=error.status, content_type="application/json")
    response.headers["WWW-Authenticate"] = 'Bearer realm="metrics"'
    return response
