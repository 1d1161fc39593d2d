"""POST /v1/responses, GET and DELETE /v1/responses/{id}. Thin routes."""

from __future__ import annotations

from flask import Blueprint, Response, jsonify, request

from horde.accounts.auth import authenticate
from horde.authz.check import authorize
from horde.authz.rules import Action
from horde.http import request_json
from horde.http.request_context import runtime
from horde.oai import auth, ignored
from horde.oai.responses import store
from horde.oai.responses.call import ResponsesCall


def register(blueprint: Blueprint) -> None:
    blueprint.add_url_rule("/responses", view_func=create_response, methods=["POST"])
    blueprint.add_url_rule("/responses/<response_id>", view_func=get_response, methods=["GET"])
    blueprint.add_url_rule("/responses/<response_id>", view_func=delete_response, methods=["DELETE"])


def create_response() -> Response:
    hub = runtime()
    user = authenticate(hub, auth.bearer_key(request.headers))  # 401 before any look at the body
    call = ResponsesCall.screen_for(hub, request_json.read_json(request, hub.settings.max_body_bytes), user)
    return call.answer(user, request.headers, request.environ)


def get_response(response_id: str) -> Response:
    hub = runtime()
    user = authenticate(hub, auth.bearer_key(request.headers))
    body = store.load(hub, user.id, response_id, "response_id").body
    response = jsonify(body)
    response.headers.update(ignored.stored_headers(body))  # named as when it was answered
    return response


def delete_response(response_id: str) -> Response:
    hub = runtime()
    user = authenticate(hub, auth.bearer_key(request.headers))
    authorize(user, Action.MANAGE_OWN_REQUEST)  # the statement deletes the caller's own alone
    store.remove(hub, user.id, response_id)
    return jsonify({"id": response_id, "object": "response", "deleted": True})
