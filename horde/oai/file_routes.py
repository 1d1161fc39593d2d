"""/v1/files: upload (multipart, streamed into the store), list, retrieve, content, delete. Thin routes over
horde/files/ and, for a batch's output and error files, horde/batches/."""

from __future__ import annotations

from flask import Blueprint, Response, jsonify, request

from horde import errors
from horde.accounts.auth import authenticate
from horde.accounts.identity import Identity
from horde.authz.check import authorize
from horde.authz.rules import Action
from horde.batches import service as batches
from horde.files import service as files
from horde.files import upload
from horde.files.models import BATCH, BATCH_OUTPUT, IN_BATCH
from horde.http import request_json
from horde.http.request_context import runtime
from horde.oai import auth, pages
from horde.oai.screening.base import check_range, invalid_choice, missing, unknown_parameter

#: The purposes an upload may name: the Horde keeps files for the Batch API only.
UPLOAD_PURPOSES = (BATCH,)
LISTED_PURPOSES = (BATCH, BATCH_OUTPUT)
ORDERS = ("asc", "desc")
EXPIRES_ANCHOR = "created_at"
#: The form fields of an upload beside the file: OpenAI's `expires_after` arrives as two.
EXPIRES_FIELDS = ("expires_after[anchor]", "expires_after[seconds]")
CREATE_ENDPOINT = "oai.create_file"


def register(blueprint: Blueprint) -> None:
    blueprint.add_url_rule("/files", view_func=create_file, methods=["POST"])
    blueprint.add_url_rule("/files", view_func=list_files, methods=["GET"])
    blueprint.add_url_rule("/files/<file_id>", view_func=get_file, methods=["GET"])
    blueprint.add_url_rule("/files/<file_id>", view_func=delete_file, methods=["DELETE"])
    blueprint.add_url_rule("/files/<file_id>/content", view_func=file_content, methods=["GET"])
    # An upload's body may pass HORDE_MAX_BODY_BYTES, up to its file's limit (docs/reference/batches.md).
    request_json.LARGER_BODIES[CREATE_ENDPOINT] = lambda settings: upload.body_limit(settings.file_max_bytes)


def _owner() -> Identity:
    user = authenticate(runtime(), auth.bearer_key(request.headers))
    authorize(user, Action.MANAGE_FILES)
    return user


def create_file() -> Response:
    hub = runtime()
    user = _owner()  # 401 and 403 before any look at the body
    request.max_content_length = upload.body_limit(hub.settings.file_max_bytes)
    received = upload.receive(
        hub, user.id, request.stream, request.mimetype, request.mimetype_params, request.content_length
    )
    try:
        purpose, expires_after_s = _upload_fields(received.fields)
        if received.file is None or received.sink is None:
            raise missing("file")
    except errors.HordeError:
        if received.sink is not None:
            received.sink.forget()
        raise
    stored = files.finish(
        hub, received.file, received.sink.writer, received.sink.size, purpose=purpose, expires_after_s=expires_after_s
    )
    return jsonify(files.file_object(stored))


def _upload_fields(fields: dict[str, str]) -> tuple[str, int | None]:
    for name in fields:
        if name != "purpose" and name not in EXPIRES_FIELDS:
            raise unknown_parameter(name)
    if "purpose" not in fields:
        raise missing("purpose")
    if fields["purpose"] not in UPLOAD_PURPOSES:
        raise invalid_choice("purpose", fields["purpose"], UPLOAD_PURPOSES)
    if not any(name in fields for name in EXPIRES_FIELDS):
        return fields["purpose"], None
    if fields.get(EXPIRES_FIELDS[0]) != EXPIRES_ANCHOR:
        raise invalid_choice("expires_after.anchor", fields.get(EXPIRES_FIELDS[0]), (EXPIRES_ANCHOR,))
    raw = fields.get(EXPIRES_FIELDS[1], "")
    if not raw.isdigit():
        raise missing("expires_after.seconds")
    low, high = files.EXPIRES_AFTER_RANGE_S
    check_range(int(raw), "expires_after.seconds", low, high, code=errors.BadRequest.rc)
    return fields["purpose"], int(raw)


def list_files() -> Response:
    hub = runtime()
    user = _owner()
    purpose = request.args.get("purpose")
    if purpose is not None and purpose not in LISTED_PURPOSES:
        raise invalid_choice("purpose", purpose, LISTED_PURPOSES)
    order = request.args.get("order", "desc")
    if order not in ORDERS:
        raise invalid_choice("order", order, ORDERS)
    limit = pages.limit_param(files.LIST_MAX_LIMIT, files.LIST_MAX_LIMIT)
    found, more = files.page(
        hub, user.id, purpose=purpose, limit=limit, ascending=order == "asc", after=request.args.get("after")
    )
    return jsonify(pages.list_object([files.file_object(file) for file in found], more))


def get_file(file_id: str) -> Response:
    hub = runtime()
    return jsonify(files.file_object(files.get(hub, _owner().id, file_id)))


def delete_file(file_id: str) -> Response:
    hub = runtime()
    file = files.get(hub, _owner().id, file_id)
    if file.store != IN_BATCH and batches.reads(hub, file.id):
        raise errors.FileInUse(
            f"The file {file_id} is the input of a batch that has not ended; cancel the batch first.", param="file_id"
        )
    files.remove(hub, file)
    return jsonify(files.deleted_object(file_id))


def file_content(file_id: str) -> Response:
    hub = runtime()
    file = files.get(hub, _owner().id, file_id)
    if file.store == IN_BATCH:
        return Response(batches.output_content(hub, file), mimetype="application/jsonl", direct_passthrough=True)
    response = Response(files.content(hub, file), mimetype="application/jsonl", direct_passthrough=True)
    response.headers["Content-Length"] = str(file.bytes)
    return response
