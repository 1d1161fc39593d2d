"""POST /v1/responses, GET and DELETE /v1/responses/{id}, POST /v1/responses/{id}/cancel. Thin routes."""

from __future__ import annotations

from flask import Blueprint, Response, jsonify, request

from horde import errors
from horde.accounts.auth import authenticate
from horde.authz.check import authorize
from horde.authz.rules import Action
from horde.http import request_json
from horde.http.request_context import runtime
from horde.oai import auth, ignored
from horde.oai.responses import background, store
from horde.oai.responses.call import ResponsesCall

#: `stream` as a query parameter: the SDK sends `true` or `false`.
QUERY_BOOLEANS = {"true": True, "false": False, "1": True, "0": False}
#: Digits of `starting_after`, with its sign: far above any stream's length, and cheap to parse.
STARTING_AFTER_MAX_CHARS = 12


def register(blueprint: Blueprint) -> None:
    blueprint.add_url_rule("/responses", view_func=create_response, methods=["POST"])
    blueprint.add_url_rule("/responses/<response_id>", view_func=get_response, methods=["GET"])
    blueprint.add_url_rule("/responses/<response_id>", view_func=delete_response, methods=["DELETE"])
    blueprint.add_url_rule("/responses/<response_id>/cancel", view_func=cancel_response, methods=["POST"])


def create_response() -> Response:
    hub = runtime()
    user = authenticate(hub, auth.bearer_key(request.headers))  # 401 before any look at the body
    call = ResponsesCall.screen_for(hub, request_json.read_json(request, hub.settings.max_body_bytes), user)
    return call.answer(user, request.headers, request.environ)


def get_response(response_id: str) -> Response:
    hub = runtime()
    user = authenticate(hub, auth.bearer_key(request.headers))
    if _query_bool("stream"):
        return background.stream_events(hub, user, response_id, _starting_after())
    body = background.retrieve(hub, user, response_id)
    response = jsonify(body)
    response.headers.update(ignored.stored_headers(body))  # named as when it was answered
    return response


def delete_response(response_id: str) -> Response:
    hub = runtime()
    user = authenticate(hub, auth.bearer_key(request.headers))
    authorize(user, Action.MANAGE_OWN_REQUEST)  # the statements find the caller's own alone
    forgotten = background.forget(hub, user, response_id)
    try:
        store.remove(hub, user.id, response_id)
    except errors.ResponseNotFound:
        if not forgotten:
            raise
    return jsonify({"id": response_id, "object": "response", "deleted": True})


def cancel_response(response_id: str) -> Response:
    hub = runtime()
    user = authenticate(hub, auth.bearer_key(request.headers))
    authorize(user, Action.MANAGE_OWN_REQUEST)  # the cancel finds the caller's own alone
    body = background.cancel(hub, user, response_id)
    response = jsonify(body)
    response.headers.update(ignored.stored_headers(body))
    return response


def _query_bool(name: str) -> bool:
    value = request.args.get(name)
    if value is None:
        return False
    if value.lower() not in QUERY_BOOLEANS:
        raise errors.BadRequest(f"Invalid value for '{name}': expected true or false, but got {value!r}.", param=name)
    return QUERY_BOOLEANS[value.lower()]


def _starting_after() -> int:
    """The sequence number after which a resumed stream starts; -1 (every event) when absent."""
    value = request.args.get("starting_after")
    if value is None:
        return -1
    digits = value[1:] if value[:1] in "+-" else value
    if not digits.isdigit() or len(value) > STARTING_AFTER_MAX_CHARS:
        raise errors.BadRequest(
            f"Invalid 'starting_after': expected an integer (a sequence number), but got {value[:40]!r}.",
            param="starting_after",
        )
    return int(value)
