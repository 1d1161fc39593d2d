"""The OpenAI-compatible blueprint: /models, /models/<id>, /chat/completions, /completions. Thin routes."""

from __future__ import annotations

from flask import Blueprint, Response, jsonify, request
from werkzeug.exceptions import HTTPException

from horde import errors
from horde.accounts.auth import authenticate
from horde.chat.cards import model_stats
from horde.http import request_json
from horde.http.request_context import json_body, runtime
from horde.oai import auth, batch_routes, cards, file_routes
from horde.oai import errors as oai_errors
from horde.oai.chat import ChatCall
from horde.oai.messages import routes as messages_routes
from horde.oai.responses import routes as responses_routes
from horde.oai.screening import ScreeningError
from horde.text import stats as text_stats


def make_blueprints() -> list[Blueprint]:
    """The OpenAI blueprint and Anthropic's Messages blueprint, both under the front's prefix."""
    return [make_blueprint(), messages_routes.make_blueprint()]


def make_blueprint() -> Blueprint:
    blueprint = Blueprint("oai", __name__)
    blueprint.add_url_rule("/models", view_func=list_models, methods=["GET"])
    blueprint.add_url_rule("/models/<path:model_id>", view_func=get_model, methods=["GET"])
    blueprint.add_url_rule("/chat/completions", view_func=chat_completions, methods=["POST"])
    blueprint.add_url_rule("/completions", view_func=completions, methods=["POST"])
    responses_routes.register(blueprint)
    file_routes.register(blueprint)
    batch_routes.register(blueprint)
    blueprint.register_error_handler(errors.HordeError, _horde_error)
    blueprint.register_error_handler(ScreeningError, _screening_error)
    blueprint.register_error_handler(HTTPException, _http_error)
    return blueprint


def _authenticated_user():
    return authenticate(runtime(), auth.bearer_key(request.headers))


def list_models() -> Response:
    _authenticated_user()
    hub = runtime()
    with hub.db.read() as session:
        chat, text = model_stats(session, hub.settings), text_stats.model_status(session, hub.settings)
        return jsonify(cards.model_list(chat, text))


def get_model(model_id: str) -> Response:
    _authenticated_user()
    hub = runtime()
    found = []
    if ":" not in model_id:
        with hub.db.read() as session:
            found = cards.cards(
                model_stats(session, hub.settings, model_id), text_stats.model_status(session, hub.settings, model_id)
            )
    if not found:
        raise errors.ModelNotFound(
            f"The model `{model_id}` does not exist or you do not have access to it.", param="model"
        )
    return jsonify(found[0])


def chat_completions() -> Response:
    hub = runtime()
    user = authenticate(hub, auth.bearer_key(request.headers))  # 401 before any look at the body
    call = ChatCall.screen(hub, json_body())
    return call.answer(user, request.headers, request.environ)


def completions() -> Response:
    from horde.oai.completions import CompletionCall

    hub = runtime()
    user = authenticate(hub, auth.bearer_key(request.headers))  # 401 before any look at the body
    call = CompletionCall(hub, request_json.parse(request.get_data()))
    return call.answer(user, request.headers, request.environ)


def _horde_error(error: errors.HordeError):
    return oai_errors.horde_error_response(error, error.metadata.get("request_id"))


def _screening_error(error: ScreeningError):
    body = oai_errors.envelope(error.message, status=error.status, code=error.code, param=error.param)
    return oai_errors.response(body, error.status)


def _http_error(error: HTTPException):
    if error.code == errors.RequestTooLarge.status:  # werkzeug's own limit (MAX_CONTENT_LENGTH)
        return _horde_error(request_json.too_large(runtime().settings.max_body_bytes))
    body = oai_errors.envelope(error.description or error.name, status=error.code or 500, code=None)
    return oai_errors.response(body, error.code or 500)
