"""What a route of either blueprint reads from the request in hand: the runtime, the native API key, the body.

A leaf: the native routes (horde/*/routes.py) and the OpenAI front (horde/oai/app.py) import it, and it
imports neither.
"""

from __future__ import annotations

from typing import Any

from flask import current_app, g, has_request_context, request

from horde.http import request_json
from horde.http.client_address import client_address

#: The key of app.extensions that holds the app's Runtime (horde/app.py create_app and bind_runtime set it).
RUNTIME_EXTENSION = "horde"


def runtime() -> Any:
    """The app's Runtime (horde/runtime.py). Typed Any: this layer sits below the runtime, and each caller hands
    it on to a service that names the parts it reads (horde/accounts/parts.py and the domains' others)."""
    return current_app.extensions[RUNTIME_EXTENSION]


def api_key() -> str | None:
    """The native API's key header; the front reads its Authorization header instead (horde/oai/auth.py)."""
    return request.headers.get("apikey")


def json_body() -> Any:
    """The parsed body (None when empty), read within the HORDE_MAX_BODY_BYTES limit."""
    return request_json.read_json(request, runtime().settings.max_body_bytes)


def raw_body() -> bytes:
    """The body's bytes, read within the HORDE_MAX_BODY_BYTES limit (for payload.RepeatedBodies)."""
    return request_json.read(request, runtime().settings.max_body_bytes)


def caller_address() -> str | None:
    """The client's address as the rate limit reads it (HORDE_TRUSTED_PROXY_HOPS), once per request; None outside
    a request (a service called directly)."""
    if not has_request_context():
        return None
    address = g.get("caller_address")
    if address is None:
        address = g.caller_address = client_address(request.environ, runtime().settings.trusted_proxy_hops)
    return address
