"""OpenAI's error envelope: {"error": {message, type, param, code, metadata}}.

A Horde refusal keeps its status and uses its return code as code.
`x-should-retry: false` goes out exactly when the Horde held (or may have held)
the request, and on no_eligible_worker.
"""

from __future__ import annotations

import json

from flask import Response

from horde import errors
from horde.chat.models import ChatRequest

ERROR_TYPES_BY_STATUS = {401: "authentication_error", 403: "permission_error", 429: "rate_limit_error"}


def error_type(status: int) -> str:
    if status >= 500:
        return "api_error"
    return ERROR_TYPES_BY_STATUS.get(status, "invalid_request_error")


def envelope(
    message: str, *, status: int, code: str | None, param: str | None = None, metadata: dict | None = None
) -> dict:
    return {
        "error": {
            "message": message,
            "type": error_type(status),
            "param": param,
            "code": code,
            "metadata": metadata or {},
        }
    }


def from_horde_error(error: errors.HordeError, request_id: str | None = None) -> dict:
    metadata = dict(error.metadata)
    metadata.setdefault("rc", error.rc)
    if request_id:
        metadata.setdefault("request_id", request_id)
    return envelope(error.message, status=error.status, code=error.rc, param=error.param, metadata=metadata)


def response(body: dict, status: int, headers: dict | None = None, *, held: bool = False) -> Response:
    result = Response(json.dumps(body), status=status, mimetype="application/json")
    for name, value in (headers or {}).items():
        result.headers[name] = value
    if held:
        result.headers["x-should-retry"] = "false"
    return result


def horde_error_response(error: errors.HordeError, request_id: str | None = None, *, held: bool = False) -> Response:
    held = held or error.should_retry is False
    return response(from_horde_error(error, request_id), error.status, error.headers, held=held)


def faulted_error(request: ChatRequest) -> errors.HordeError:
    """ChatRequestFaulted with the last refusal or worker fault, worded as the guide shows."""
    rc, reason = request.fault_rc or "ChatWorkerFault", request.fault_message or "no reason given"
    if rc == errors.ChatSubmitNonconformant.rc:
        cause = "after refusing a worker's reply"
    elif rc == errors.ChatJobExpired.rc:
        cause = "after its worker's job expired"
    else:
        cause = "after its worker reported a fault"
    error = errors.ChatRequestFaulted(
        f"The AI Horde reports request {request.id} as faulted {cause} ({rc}): {reason}",
        metadata={"request_id": request.id, "rc": rc},
    )
    return error


def cancelled_error(request: ChatRequest) -> errors.HordeError:
    """The error that ended a cancelled request: the Horde's own reason (a worker gap) when it had one."""
    error_class = _classes_by_rc().get(request.fault_rc) if request.fault_rc else None
    if error_class is not None:
        return error_class(request.fault_message, metadata={"request_id": request.id})
    return errors.ChatRequestCancelled(
        f"The request {request.id} was cancelled on the Horde.", metadata={"request_id": request.id}
    )


def _classes_by_rc() -> dict:
    return {cls.rc: cls for cls in reversed(errors.all_return_codes())}
