"""The native API at /api/v2: one flask-restx Api, its namespaces and its error handler."""

from __future__ import annotations

from flask import Blueprint, current_app, request
from flask_restx import Api, Namespace
from marshmallow import Schema, fields
from werkzeug.exceptions import HTTPException

from horde import errors
from horde.accounts.routes import kudos_namespace, shared_keys_namespace
from horde.chat.routes import namespace as chat_namespace
from horde.chat.routes import stats_namespace, status_namespace
from horde.console.routes import account_namespace, series_namespace
from horde.dispatch.worker_routes import namespace as workers_namespace
from horde.http import request_json
from horde.http.request_context import runtime
from horde.http.swagger import body_model
from horde.moderation.routes import operations_namespace
from horde.registration.routes import api_key_namespace, oidc_namespace, register_namespace
from horde.registry.routes import namespace as registry_namespace
from horde.registry.status_routes import image_stats_namespace, teams_namespace
from horde.text.routes import namespace as text_namespace
from horde.text.routes import stats_namespace as text_stats_namespace
from horde.users.routes import find_namespace, users_namespace

NAMESPACES_BY_PATH: tuple[tuple[str, Namespace], ...] = (
    ("/find_user", find_namespace),
    ("/generate/chat", chat_namespace),
    ("/generate/chat", workers_namespace),
    ("/status", status_namespace),
    ("/stats/chat", stats_namespace),
    ("/generate/text", text_namespace),
    ("/stats/text", text_stats_namespace),
    ("/workers", registry_namespace),
    ("/teams", teams_namespace),
    ("/stats/img", image_stats_namespace),
    ("/users", users_namespace),
    ("/kudos", kudos_namespace),
    ("/sharedkeys", shared_keys_namespace),
    ("/register", register_namespace),
    ("/users", api_key_namespace),
    ("/users", account_namespace),
    ("/stats", series_namespace),
    ("/oidc", oidc_namespace),
    ("/operations", operations_namespace),
)
#: Every path under it answers in the native shape, an unknown path or a wrong method included.
NATIVE_PREFIX = "/api"


class ErrorSchema(Schema):
    """Every refusal and error of the native API (HordeError.to_native); the status is the rc's."""

    message = fields.String(required=True)
    rc = fields.String(required=True, metadata={"description": "A return code of README_return_codes.md"})
    param = fields.String(metadata={"description": "The failing key, when one is to blame"})
    metadata = fields.Dict(metadata={"description": "Details some return codes carry"})


def make_blueprint() -> Blueprint:
    blueprint = Blueprint("native", __name__, url_prefix="/api/v2")

    @blueprint.before_request
    def _storable_path():
        """A request or job id in the path with NUL is refused like one in a body (PostgreSQL cannot hold it)."""
        for name, value in (request.view_args or {}).items():
            if isinstance(value, str) and not request_json.is_storable(value):
                raise errors.BadRequest(
                    f"The '{name}' in the path holds a NUL character or a lone surrogate.", param=name
                )

    api = Api(
        blueprint,
        title="Horde native API",
        version="2",
        doc="/doc",
        description="Chat and text requests, workers and accounts. Errors are {message, rc}; "
        "see README_return_codes.md.",
    )
    for path, namespace in NAMESPACES_BY_PATH:
        _document_errors(namespace)
        # flask-restx keeps every Api a module-level namespace was added to, and with it that Api's app: an app
        # made after another (the tests make one per test) would keep all the earlier ones alive. Every resource
        # and model of a namespace is declared when its module is imported, so the latest Api is the only one
        # it still needs to know.
        namespace.apis.clear()
        api.add_namespace(namespace, path=path)

    @api.errorhandler(errors.HordeError)
    def _horde_error(error):
        return error.to_native(), error.status, error.headers

    @api.errorhandler(Exception)
    def _unexpected(error):
        """A bug, never client input: logged, and still answered in the native shape."""
        if isinstance(error, HTTPException):
            if error.code == errors.RequestTooLarge.status:  # werkzeug's own limit (MAX_CONTENT_LENGTH)
                refusal = request_json.too_large(runtime().settings.max_body_bytes)
                return refusal.to_native(), refusal.status, refusal.headers
            if error.code in (errors.NotFound.status, errors.MethodNotAllowed.status):
                return routing_error(error)
            code = error.code or errors.InternalError.status
            error_class = errors.BadRequest if code < errors.InternalError.status else errors.InternalError
            return {"message": error.description, "rc": error_class.rc}, code
        current_app.logger.exception("unexpected error on %s", request.path)
        return errors.InternalError("Internal Server Error").to_native(), errors.InternalError.status

    return blueprint


def covers(path: str) -> bool:
    """The path is under /api, where every answer is the native API's JSON."""
    return path == NATIVE_PREFIX or path.startswith(NATIVE_PREFIX + "/")


def routing_error(error: HTTPException) -> tuple[dict, int, dict]:
    """A path under /api that no route serves (404 NotFound), or a method its route does not take (405
    MethodNotAllowed, with `Allow`): werkzeug's routing refusals, in the native shape."""
    if error.code == errors.MethodNotAllowed.status:
        allowed = sorted(getattr(error, "valid_methods", None) or ())
        refusal: errors.HordeError = errors.MethodNotAllowed(
            f"{request.method} is not allowed on {request.path}; it takes {', '.join(allowed)}.",
            headers={"Allow": ", ".join(allowed)},
        )
    else:
        refusal = errors.NotFound(f"No endpoint at {request.path}; see /api/v2/doc for the native API.")
    return refusal.to_native(), refusal.status, refusal.headers


def _document_errors(namespace: Namespace) -> None:
    """Every operation of `namespace` answers an error in one shape: its Swagger `default` response."""
    error_model = body_model(namespace, "Error", ErrorSchema)
    for route in namespace.resources:
        namespace.response("default", "A refusal or an error; its status is its rc's", error_model)(route.resource)
