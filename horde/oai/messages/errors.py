"""Anthropic's error shape, {"type": "error", "error": {"type", "message"}}, for every Horde refusal.

Statuses follow Anthropic: the chat front's 503 is 529 overloaded_error, other
server-side failures (and 499, a cancelled request) are 500 api_error. The
message ends with the Horde's code, the param when there is one, and the
request id, since the shape has no field for them.
"""

from __future__ import annotations

from flask import Response

from horde import errors
from horde.oai.errors import response

TYPES_BY_STATUS = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}
OVERLOADED_STATUS = 529
API_ERROR_STATUS = 500


def status_for(status: int) -> int:
    if status == 503:
        return OVERLOADED_STATUS
    if status >= 500 or status == 499:
        return API_ERROR_STATUS
    return status


def body(message: str, status: int) -> dict:
    return {
        "type": "error",
        "error": {"type": TYPES_BY_STATUS.get(status, "invalid_request_error"), "message": message},
    }


def described(message: str, code: str | None, param: str | None, request_id: str | None) -> str:
    details = [f"code: {code}"] if code else []
    if param:
        details.append(f"param: {param}")
    if request_id:
        details.append(f"request_id: {request_id}")
    return f"{message} ({', '.join(details)})" if details else message


def horde_error_body(error: errors.HordeError, request_id: str | None) -> tuple[dict, int]:
    status = status_for(error.status)
    request_id = request_id or error.metadata.get("request_id")
    return body(described(error.message, error.rc, error.param, request_id), status), status


def horde_error_response(error: errors.HordeError, request_id: str | None = None, *, held: bool = False) -> Response:
    payload, status = horde_error_body(error, request_id)
    headers = dict(error.headers)
    if request_id:
        headers["request-id"] = request_id
    return response(payload, status, headers, held=held or error.should_retry is False)


def screening_response(message: str, status: int, code: str, param: str | None) -> Response:
    status = status_for(status)
    return response(body(described(message, code, param, None), status), status)
