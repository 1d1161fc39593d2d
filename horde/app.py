"""The application factory. Importing this module has no side effects."""

from __future__ import annotations

from flask import Flask, jsonify

from horde.config import Settings
from horde.errors import HordeError
from horde.http.request_context import RUNTIME_EXTENSION
from horde.http.request_context import runtime as current_runtime
from horde.runtime import Runtime

#: The key of app.extensions that holds the app_shape the app was built for.
SHAPE_EXTENSION = "horde.shape"
#: The moderators' operations (/operations/ipaddr, block_worker_ipaddr, audit): never refused for an address in
#: timeout.
OPERATIONS_PATH = "/api/v2/operations/"


def app_shape(settings: Settings) -> tuple:
    """The settings create_app builds an app from, as a hashable key: the front's prefix (its routes' prefix), the
    CORS origins and the request log's format (horde/ops/routes.py install). An app serves any runtime whose
    settings give its key; every other setting is read from the runtime when a request comes."""
    return (settings.oai_prefix, settings.cors_origins, settings.log_format)


def create_app(settings: Settings | None = None, *, runtime: Runtime | None = None) -> Flask:
    """Build the app: native API at /api/v2, the OpenAI front at settings.oai_prefix."""
    from flask import request

    from horde import api
    from horde.api import make_blueprint
    from horde.http import request_json
    from horde.http.request_context import caller_address
    from horde.oai.app import make_blueprints as make_oai_blueprints
    from horde.ops.routes import install as install_ops
    from horde.oversight import gate
    from horde.registration.page_routes import make_blueprint as make_registration_pages
    from horde.web.routes import make_blueprint as make_web_blueprint

    settings = settings or (runtime.settings if runtime else Settings.from_env())
    runtime = runtime or Runtime.build(settings)
    app = Flask("horde")
    app.config["RESTX_MASK_SWAGGER"] = False
    app.config["ERROR_404_HELP"] = False  # flask-restx would append URL guesses to every 404 message
    app.json.sort_keys = False  # type: ignore[attr-defined]  # Flask's default provider has it
    app.extensions[SHAPE_EXTENSION] = app_shape(settings)
    _attach(app, runtime, settings.max_body_bytes)
    oai_prefix = settings.oai_prefix.rstrip("/")  # shapes the routes below: read once, as they are
    app.register_blueprint(make_blueprint())
    for blueprint in make_oai_blueprints():  # OpenAI's API and Anthropic's Messages API
        app.register_blueprint(blueprint, url_prefix=settings.oai_prefix)
    install_ops(app, settings)
    app.register_blueprint(make_web_blueprint())
    app.register_blueprint(make_registration_pages())  # the AI Horde's /register form, the OpenID Connect sign-in

    # What a request needs of the runtime is read when it comes (current_runtime), never kept from this build:
    # bind_runtime may point the app at another.
    @app.before_request
    def refuse_large_bodies():
        """A declared body above HORDE_MAX_BODY_BYTES (an upload: its own limit) is refused on every route, before
        any work."""
        limit = request_json.body_limit(request.endpoint, current_runtime().settings)
        request_json.check_declared_length(request, limit)

    @app.before_request
    def refuse_timed_out_addresses():
        """A call of either API from an address in timeout (docs/reference/moderation.md) is 403 TimeoutIP, but
        for the moderators' operations, so that a moderator behind a timed-out network can lift it. Read from the
        process's view: no database read unless an address is in timeout somewhere."""
        path = request.path
        if not (api.covers(path) or path.startswith(oai_prefix + "/")) or path.startswith(OPERATIONS_PATH):
            return
        snapshot = current_runtime().oversight.current()
        address = caller_address() if snapshot.timeouts else None
        if address is not None:
            gate.refuse_timed_out(snapshot, address)

    @app.get("/health")
    def health():
        """Liveness only: the process answers. Readiness (database, Redis) is /ready."""
        return jsonify({"status": "ok"})

    @app.get("/ready")
    def ready():
        from horde.ops.readiness import readiness

        body, status, headers = readiness(current_runtime())
        return jsonify(body), status, headers

    @app.errorhandler(HordeError)
    def horde_error(error: HordeError):
        """A refusal outside both blueprints (a large body on an unknown path): the shape of the path's API."""
        from flask import request

        from horde.oai.errors import horde_error_response

        if request.path.startswith(oai_prefix + "/"):
            return horde_error_response(error)
        return jsonify(error.to_native()), error.status, error.headers

    @app.errorhandler(404)
    @app.errorhandler(405)
    def not_found(error):
        """Under the front's prefix an unserved path or a wrong method is unsupported_endpoint; under /api it is
        the native API's NotFound or MethodNotAllowed."""
        from flask import request

        from horde import api
        from horde.oai.endpoints import unsupported

        if request.path.startswith(oai_prefix + "/"):
            return unsupported(app, oai_prefix, error)
        if api.covers(request.path):
            return api.routing_error(error)
        return error

    return app


def bind_runtime(app: Flask, runtime: Runtime) -> None:
    """Point an app that create_app built at another runtime: its requests then read that runtime, and werkzeug's
    body limit (MAX_CONTENT_LENGTH) is that runtime's HORDE_MAX_BODY_BYTES.

    A server builds its app once and never calls this; the tests build one app per shape and bind it to each test's
    runtime, since building an app (werkzeug compiling its rules, flask-restx its docs) is much of a short test's CPU.
    Raises ValueError when the runtime's settings would have built another app (app_shape), whose routes, CORS
    or request log this app does not have."""
    built, wanted = app.extensions.get(SHAPE_EXTENSION), app_shape(runtime.settings)
    if built != wanted:
        raise ValueError(f"This app was built for {built!r}; the runtime's settings shape {wanted!r}: build another.")
    _attach(app, runtime, runtime.settings.max_body_bytes)


def _attach(app: Flask, runtime: Runtime, max_body_bytes: int) -> None:
    """The runtime every request reads, and werkzeug's backstop for any body reader."""
    app.config["MAX_CONTENT_LENGTH"] = max_body_bytes
    app.extensions[RUNTIME_EXTENSION] = runtime


SCHEMA_ATTEMPTS = 5
SCHEMA_RETRY_DELAY_S = 0.2


def init_schema(runtime: Runtime) -> None:
    """Create the tables, the anonymous user and the server secret; safe on every start, and when processes start
    together."""
    import time

    from sqlalchemy.exc import DBAPIError

    from horde.accounts.service import ensure_anonymous_user
    from horde.models import create_schema
    from horde.storage.secrets import stored_secret

    for attempt in range(SCHEMA_ATTEMPTS):
        try:
            create_schema(runtime.db.engine)
            with runtime.db.transaction() as session:
                ensure_anonymous_user(session)
                stored_secret(session)
            return
        except DBAPIError:  # another process created the same table or user a moment earlier
            if attempt == SCHEMA_ATTEMPTS - 1:
                raise
            time.sleep(SCHEMA_RETRY_DELAY_S)
