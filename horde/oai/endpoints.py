"""Unserved paths and wrong methods under the front's prefix: 404 and 405 `unsupported_endpoint`.

A client that calls an endpoint the Horde does not serve (embeddings, audio,
a wrong method) learns which endpoints it does serve, in OpenAI's envelope.
"""

from __future__ import annotations

from flask import Flask, Response, request
from werkzeug.exceptions import HTTPException

from horde import errors
from horde.oai.errors import horde_error_response

IMPLICIT_METHODS = frozenset({"HEAD", "OPTIONS"})


def served(app: Flask, prefix: str) -> list[str]:
    """`METHOD /path` of every route under the prefix, in path order."""
    found = []
    for rule in app.url_map.iter_rules():
        if rule.rule.startswith(prefix + "/"):
            methods = sorted((rule.methods or set()) - IMPLICIT_METHODS)
            found += [f"{method} {rule.rule}" for method in methods]
    return sorted(set(found), key=lambda entry: (entry.split(" ", 1)[1], entry))


def unsupported(app: Flask, prefix: str, error: HTTPException) -> Response:
    """The 404 or 405 of a path under the front's prefix."""
    status = error.code or 404
    endpoints = ", ".join(served(app, prefix))
    if status == 405:
        message = f"The method {request.method} is not supported on {request.path}. The AI Horde serves: {endpoints}."
    else:
        message = f"The AI Horde does not serve {request.method} {request.path}. It serves: {endpoints}."
    allowed = getattr(error, "valid_methods", None)
    headers = {"Allow": ", ".join(allowed)} if status == 405 and allowed else None
    return horde_error_response(errors.UnsupportedEndpoint(message, status=status, headers=headers))
