"""The root of every return code and the refusals any route may answer: bad input, not found, forbidden, busy."""

from __future__ import annotations


class HordeError(Exception):
    status = 400
    rc = "BadRequest"
    #: False where the Horde held (or may have held) the request: clients must not retry blindly.
    should_retry: bool | None = None

    def __init__(
        self,
        message: str,
        *,
        param: str | None = None,
        metadata: dict | None = None,
        headers: dict | None = None,
        status: int | None = None,
    ):
        super().__init__(message)
        self.message = message
        self.param = param
        self.metadata = dict(metadata or {})
        self.headers = dict(headers or {})
        if status is not None:
            self.status = status

    def to_native(self) -> dict:
        body: dict[str, object] = {"message": self.message, "rc": self.rc}
        if self.param:
            body["param"] = self.param
        if self.metadata:
            body["metadata"] = self.metadata
        return body


class BadRequest(HordeError):
    """A native payload that fails validation; `param` names the failing key."""


class InternalError(HordeError):
    """A bug in the Horde, never the client's input: what the native API answers for an unexpected exception."""

    status = 500
    rc = "InternalError"


class QueueUnavailable(HordeError):
    status = 503
    rc = "queue_unavailable"


class ServiceUnavailable(HordeError):
    """The database cannot be reached: nothing was decided, so the same call may succeed after Retry-After.

    `maybe_committed` is set when the connection failed while committing: the change may have been stored.
    """

    status = 503
    rc = "service_unavailable"
    RETRY_AFTER_S = 5

    def __init__(self, message: str | None = None, *, metadata: dict | None = None) -> None:
        super().__init__(
            message or f"The Horde cannot reach its database right now. Retry after {self.RETRY_AFTER_S} s.",
            metadata=metadata,
        )
        self.headers.setdefault("Retry-After", str(self.RETRY_AFTER_S))
        self.maybe_committed = False


class TooManyRequests(HordeError):
    status = 429
    rc = "rate_limit_exceeded"


class ServerShuttingDown(HordeError):
    """The process serving the stream or wait is shutting down; the request stays held on the Horde."""

    status = 503
    rc = "server_shutting_down"
    should_retry = True


class NotFound(HordeError):
    """A path under /api that the native API does not serve."""

    status = 404
    rc = "NotFound"


class MethodNotAllowed(HordeError):
    """A method a served path under /api does not take; the answer's `Allow` header lists those it does."""

    status = 405
    rc = "MethodNotAllowed"


class Forbidden(HordeError):
    """The caller may not do this to what it names (another user's shared key, a shared key over its count)."""

    status = 403
    rc = "Forbidden"


class AnonForbidden(HordeError):
    """The anonymous user cannot own shared keys."""

    status = 403
    rc = "AnonForbidden"


class MaintenanceMode(HordeError):
    """The Horde is in maintenance: no new generation request; those waiting or running finish."""

    status = 503
    rc = "MaintenanceMode"
    should_retry = False
    RETRY_AFTER_S = 60

    def __init__(self, message: str) -> None:
        super().__init__(message, headers={"Retry-After": str(self.RETRY_AFTER_S)})
