"""/v1/batches: create, list, retrieve, cancel. Thin routes over horde/batches/; the body of a create is screened
here, in OpenAI's words."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, jsonify, request

from horde.accounts.auth import authenticate
from horde.accounts.identity import Identity
from horde.authz.check import authorize
from horde.authz.rules import Action
from horde.batches import service as batches
from horde.batches.objects import batch_object
from horde.files.service import EXPIRES_AFTER_RANGE_S
from horde.http import request_json
from horde.http.request_context import runtime
from horde.oai import auth, pages
from horde.oai.responses.request import check_metadata
from horde.oai.screening.base import (
    BAD_REQUEST,
    ScreeningError,
    check_range,
    invalid_choice,
    json_type_name,
    missing,
    require_int,
    require_object,
    require_string,
    unknown_parameter,
)

CREATE_FIELDS = ("input_file_id", "endpoint", "completion_window", "metadata", "output_expires_after")
EXPIRES_ANCHOR = "created_at"


def register(blueprint: Blueprint) -> None:
    blueprint.add_url_rule("/batches", view_func=create_batch, methods=["POST"])
    blueprint.add_url_rule("/batches", view_func=list_batches, methods=["GET"])
    blueprint.add_url_rule("/batches/<batch_id>", view_func=get_batch, methods=["GET"])
    blueprint.add_url_rule("/batches/<batch_id>/cancel", view_func=cancel_batch, methods=["POST"])


def _owner() -> Identity:
    user = authenticate(runtime(), auth.bearer_key(request.headers))
    authorize(user, Action.RUN_BATCHES)
    return user


def create_batch() -> Response:
    hub = runtime()
    user = _owner()  # 401 before any look at the body
    fields = screen_create(request_json.read_json(request, hub.settings.max_body_bytes))
    batch = batches.create(hub, user, **fields)
    return jsonify(batch_object(batch))


def screen_create(body: Any) -> dict[str, Any]:
    """The create's fields as batches.create takes them, or the first refusal."""
    if not isinstance(body, dict):
        raise ScreeningError(
            f"Invalid type for the request body: expected an object, but got {json_type_name(body)} instead.",
            code=BAD_REQUEST,
        )
    for key in body:
        if key not in CREATE_FIELDS:
            raise unknown_parameter(key)
    for key in CREATE_FIELDS[:3]:
        if body.get(key) is None:
            raise missing(key)
    input_file_id = require_string(body["input_file_id"], "input_file_id")
    endpoint = require_string(body["endpoint"], "endpoint")
    if endpoint not in batches.ENDPOINTS:
        raise invalid_choice("endpoint", endpoint, batches.ENDPOINTS)
    window = require_string(body["completion_window"], "completion_window")
    if window not in batches.COMPLETION_WINDOWS:
        raise invalid_choice("completion_window", window, tuple(batches.COMPLETION_WINDOWS))
    metadata = body.get("metadata")
    if metadata is not None:
        check_metadata(metadata)
    fields = {"input_file_id": input_file_id, "endpoint": endpoint, "window": window, "metadata": metadata}
    if body.get("output_expires_after") is not None:
        fields["output_expires_after_s"] = _output_expiry(body["output_expires_after"])
    return fields


def _output_expiry(value: Any) -> int:
    """OpenAI's output_expires_after: {"anchor": "created_at", "seconds": 3600 to 2592000}, in seconds."""
    policy = require_object(value, "output_expires_after")
    for key in policy:
        if key not in ("anchor", "seconds"):
            raise unknown_parameter(f"output_expires_after.{key}")
    if policy.get("anchor") != EXPIRES_ANCHOR:
        raise invalid_choice("output_expires_after.anchor", policy.get("anchor"), (EXPIRES_ANCHOR,))
    seconds = require_int(policy.get("seconds"), "output_expires_after.seconds")
    low, high = EXPIRES_AFTER_RANGE_S
    check_range(seconds, "output_expires_after.seconds", low, high, code=BAD_REQUEST)
    return seconds


def list_batches() -> Response:
    hub = runtime()
    user = _owner()
    limit = pages.limit_param(batches.LIST_DEFAULT_LIMIT, batches.LIST_MAX_LIMIT)
    found, more = batches.page(hub, user.id, after=request.args.get("after"), limit=limit)
    return jsonify(pages.list_object([batch_object(batch) for batch in found], more))


def get_batch(batch_id: str) -> Response:
    hub = runtime()
    return jsonify(batch_object(batches.get(hub, _owner().id, batch_id)))


def cancel_batch(batch_id: str) -> Response:
    hub = runtime()
    return jsonify(batch_object(batches.cancel(hub, _owner().id, batch_id)))
