"""POST /v1/messages and /v1/messages/count_tokens, with Anthropic's keys and error shape. Thin routes."""

from __future__ import annotations

from typing import TYPE_CHECKING

from flask import Blueprint, Response, jsonify, request
from werkzeug.exceptions import HTTPException

from horde import errors
from horde.accounts.auth import authenticate
from horde.accounts.identity import Identity
from horde.http import request_json
from horde.http.request_context import runtime
from horde.oai import auth
from horde.oai.messages import call as messages
from horde.oai.messages import errors as anthropic_errors
from horde.oai.screening import ScreeningError

if TYPE_CHECKING:
    pass

API_KEY_HEADER = "x-api-key"


def make_blueprint() -> Blueprint:
    """A blueprint of its own, so that its errors are Anthropic's whatever raises them."""
    blueprint = Blueprint("anthropic", __name__)
    blueprint.add_url_rule("/messages", view_func=create_message, methods=["POST"])
    blueprint.add_url_rule("/messages/count_tokens", view_func=count_tokens, methods=["POST"])
    blueprint.register_error_handler(errors.HordeError, _horde_error)
    blueprint.register_error_handler(ScreeningError, _screening_error)
    blueprint.register_error_handler(HTTPException, _http_error)
    return blueprint


def _user() -> Identity:
    """The key of `x-api-key` (Anthropic's SDK) or of `Authorization: Bearer`; none is anonymous."""
    key = request.headers.get(API_KEY_HEADER)
    return authenticate(runtime(), key.strip() if key else auth.bearer_key(request.headers))


def create_message() -> Response:
    user = _user()  # 401 before any look at the body
    hub = runtime()
    call = messages.MessagesCall.screen_body(hub, request_json.read_json(request, hub.settings.max_body_bytes))
    return call.answer(user, request.headers, request.environ)


def count_tokens() -> Response:
    _user()
    hub = runtime()
    return jsonify(messages.count_tokens(hub, request_json.read_json(request, hub.settings.max_body_bytes)))


def _horde_error(error: errors.HordeError) -> Response:
    return anthropic_errors.horde_error_response(error, error.metadata.get("request_id"))


def _screening_error(error: ScreeningError) -> Response:
    return anthropic_errors.screening_response(error.message, error.status, error.code, error.param)


def _http_error(error: HTTPException) -> Response:
    status = error.code or 500
    return anthropic_errors.screening_response(error.description or error.name, status, "BadRequest", None)
