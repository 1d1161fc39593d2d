"""CORS on the API prefixes: keys travel in headers, never cookies, so any origin is safe by default."""

from __future__ import annotations

from flask import Flask, Response, request

ALLOWED_METHODS = "GET, POST, PUT, PATCH, DELETE, OPTIONS"
ALLOWED_HEADERS = (
    "Authorization",
    "Content-Type",
    "Idempotency-Key",
    "X-Title",
    "HTTP-Referer",
    "apikey",
    "Client-Agent",
    "x-api-key",
    "anthropic-version",
    "x-request-id",
)
#: Headers a browser may send whose names have a known prefix (the OpenAI SDK's telemetry).
ALLOWED_HEADER_PREFIXES = ("x-stainless-",)
EXPOSED_HEADERS = ("x-should-retry", "Retry-After", "Idempotent-Replayed", "x-request-id")
EXPOSED_HEADER_PREFIXES = ("x-ratelimit-",)
PREFLIGHT_MAX_AGE_S = 86_400
API_PREFIX = "/api/v2"


class Cors:
    def __init__(self, origins: tuple[str, ...], prefixes: tuple[str, ...]):
        self.any_origin = "*" in origins
        self.origins = frozenset(origins)
        self.prefixes = tuple(prefix.rstrip("/") for prefix in prefixes)

    def covers(self, path: str) -> bool:
        return any(path == prefix or path.startswith(prefix + "/") for prefix in self.prefixes)

    def allowed_origin(self, origin: str | None) -> str | None:
        """The value of Access-Control-Allow-Origin for this origin, or None for no CORS headers."""
        if self.any_origin:
            return "*"
        return origin if origin in self.origins else None

    def preflight(self) -> Response:
        response = Response(status=204)
        response.headers["Allow"] = ALLOWED_METHODS
        allowed = self.allowed_origin(request.headers.get("Origin"))
        if allowed is None:
            return response
        response.headers["Access-Control-Allow-Origin"] = allowed
        response.headers["Access-Control-Allow-Methods"] = ALLOWED_METHODS
        response.headers["Access-Control-Allow-Headers"] = ", ".join(ALLOWED_HEADERS + self._requested_prefixed())
        response.headers["Access-Control-Max-Age"] = str(PREFLIGHT_MAX_AGE_S)
        self._vary(response)
        return response

    def decorate(self, response: Response) -> Response:
        allowed = self.allowed_origin(request.headers.get("Origin"))
        if allowed is None:
            return response
        response.headers["Access-Control-Allow-Origin"] = allowed
        prefixed = [name for name, _ in response.headers.items() if name.lower().startswith(EXPOSED_HEADER_PREFIXES)]
        response.headers["Access-Control-Expose-Headers"] = ", ".join(EXPOSED_HEADERS + tuple(dict.fromkeys(prefixed)))
        self._vary(response)
        return response

    def _requested_prefixed(self) -> tuple[str, ...]:
        requested = request.headers.get("Access-Control-Request-Headers", "")
        names = (name.strip() for name in requested.split(","))
        return tuple(name for name in names if name.lower().startswith(ALLOWED_HEADER_PREFIXES))

    def _vary(self, response: Response) -> None:
        if not self.any_origin:
            response.vary.add("Origin")


def install(app: Flask, origins: tuple[str, ...], oai_prefix: str) -> None:
    """Answer preflights on the API prefixes before routing, and add CORS headers to their answers."""
    cors = Cors(origins, (oai_prefix, API_PREFIX))

    @app.before_request
    def _preflight():
        if request.method == "OPTIONS" and cors.covers(request.path):
            return cors.preflight()
        return None

    @app.after_request
    def _decorate(response: Response) -> Response:
        if cors.covers(request.path):
            return cors.decorate(response)
        return response
