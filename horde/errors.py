"""Native return codes: one exception class each, rendered by one handler.

Every refusal of the Horde is a `HordeError`. The native API renders it as
`{"message", "rc"}`; the OpenAI front renders the same error in OpenAI's
envelope (horde/oai/errors.py), keeping its status and using the rc as code.
"""

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


class RequestTooLarge(HordeError):
    """A body above HORDE_MAX_BODY_BYTES; the connection closes without reading the rest."""

    status = 413
    rc = "request_too_large"


class UnsupportedChatParameter(HordeError):
    rc = "UnsupportedChatParameter"


class ChatRequestConflict(HordeError):
    rc = "ChatRequestConflict"


class InvalidAPIKey(HordeError):
    status = 401
    rc = "InvalidAPIKey"


class InvalidAuthorizationHeader(HordeError):
    status = 401
    rc = "InvalidAuthorizationHeader"


class AnonForbiddenWorker(HordeError):
    status = 403
    rc = "AnonForbiddenWorker"


class WorkerNameTaken(HordeError):
    status = 403
    rc = "WorkerNameTaken"


class KudosUpfront(HordeError):
    status = 403
    rc = "KudosUpfront"


class ModelNotFound(HordeError):
    status = 404
    rc = "model_not_found"


class InternalError(HordeError):
    """A bug in the Horde, never the client's input: what the native API answers for an unexpected exception."""

    status = 500
    rc = "InternalError"


class RequestNotFound(HordeError):
    status = 404
    rc = "RequestNotFound"


class ResponseNotFound(HordeError):
    """A stored response that is unknown, expired, deleted or another user's."""

    status = 404
    rc = "response_not_found"


class ResponseNotBackground(HordeError):
    """A cancel, or a GET with `stream=true`, of a stored response that was not created with `background: true`."""

    rc = "response_not_background"


class ResponseInProgress(HordeError):
    """previous_response_id (or an item reference) names a background response that has not ended yet."""

    rc = "response_in_progress"


class UnsupportedEndpoint(HordeError):
    """A path under the front's prefix that the Horde does not serve (404), or a wrong method on one (405)."""

    status = 404
    rc = "unsupported_endpoint"


class UserNotFound(HordeError):
    status = 404
    rc = "UserNotFound"


class NoWorkerSupportsFeatures(HordeError):
    status = 404
    rc = "no_worker_supports_features"


class NoWorkerSupportsLimit(HordeError):
    status = 400
    rc = "no_worker_supports_limit"


class MaxKudosExceeded(HordeError):
    status = 400
    rc = "max_kudos_exceeded"


class NoEligibleWorker(HordeError):
    status = 503
    rc = "no_eligible_worker"
    should_retry = False


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


class ImageFetchFailed(HordeError):
    rc = "ImageFetchFailed"


class ImageUrlForbidden(HordeError):
    rc = "ImageUrlForbidden"


class ImageTooLarge(HordeError):
    status = 413
    rc = "ImageTooLarge"


class JobNotFound(HordeError):
    status = 404
    rc = "JobNotFound"


class WorkerNotFound(HordeError):
    status = 404
    rc = "WorkerNotFound"


class InvalidJobID(HordeError):
    """A text submit names a job the Horde never handed out."""

    status = 404
    rc = "InvalidJobID"


class WrongCredentials(HordeError):
    """A text submit for a job of a worker owned by another user."""

    status = 403
    rc = "WrongCredentials"


class StyleNotFound(HordeError):
    status = 404
    rc = "StyleNotFound"


class AbortedGen(HordeError):
    status = 400
    rc = "AbortedGen"


class DuplicateGen(HordeError):
    status = 400
    rc = "DuplicateGen"


class ChatSubmitNonconformant(HordeError):
    status = 400
    rc = "ChatSubmitNonconformant"


class ChatWorkerFault(HordeError):
    rc = "ChatWorkerFault"


class ChatJobExpired(HordeError):
    rc = "ChatJobExpired"


class ChatRequestFaulted(HordeError):
    status = 502
    rc = "ChatRequestFaulted"
    should_retry = False


class ChatRequestCancelled(HordeError):
    status = 499
    rc = "ChatRequestCancelled"
    should_retry = False


class ChatStreamDiverged(HordeError):
    status = 502
    rc = "ChatStreamDiverged"
    should_retry = False


class ServerShuttingDown(HordeError):
    """The process serving the stream or wait is shutting down; the request stays held on the Horde."""

    status = 503
    rc = "server_shutting_down"
    should_retry = True


class IdempotencyConflict(HordeError):
    status = 409
    rc = "idempotency_conflict"
    should_retry = False


class InvalidIdempotencyKey(HordeError):
    rc = "BadRequest"


class NotFound(HordeError):
    """A path under /api that the native API does not serve."""

    status = 404
    rc = "NotFound"


class MethodNotAllowed(HordeError):
    """A method a served path under /api does not take; the answer's `Allow` header lists those it does."""

    status = 405
    rc = "MethodNotAllowed"


class NotOwner(HordeError):
    """A worker changed by a user who neither owns it nor moderates."""

    status = 403
    rc = "NotOwner"


class NotModerator(HordeError):
    """An action only a moderator (or the target's owner, where the authorization table says so) may take."""

    status = 403
    rc = "NotModerator"


class NotAdmin(HordeError):
    """An action only an admin (or the target user themself, where the authorization table says so) may take."""

    status = 403
    rc = "NotAdmin"


class WorkerNameAlreadyExists(HordeError):
    status = 400
    rc = "WorkerNameAlreadyExists"


class TooLongWorkerName(HordeError):
    """A worker's new name or info above its limit (the AI Horde answers both with this rc)."""

    status = 400
    rc = "TooLongWorkerName"


class NoWorkerModSelected(HordeError):
    status = 400
    rc = "NoWorkerModSelected"


class TeamNotFound(HordeError):
    status = 404
    rc = "TeamNotFound"


class WorkerMaintenance(HordeError):
    """A pop of a worker its owner put in maintenance; the message is the owner's."""

    status = 403
    rc = "WorkerMaintenance"


# -- The AI Horde's accounts API: users, kudos transfers, shared keys (docs/reference/accounts.md) ----------------


class Forbidden(HordeError):
    """The caller may not do this to what it names (another user's shared key, a shared key over its count)."""

    status = 403
    rc = "Forbidden"


class AnonForbidden(HordeError):
    """The anonymous user cannot own shared keys."""

    status = 403
    rc = "AnonForbidden"


class KudosValidationError(HordeError):
    """A kudos transfer refused; the AI Horde answers every such refusal 400 with the rc of its reason."""

    rc = "KudosValidationError"


class InvalidTargetUsername(KudosValidationError):
    rc = "InvalidTargetUsername"


class KudosTransferFromAnon(KudosValidationError):
    rc = "KudosTransferFromAnon"


class KudosTransferToAnon(KudosValidationError):
    rc = "KudosTransferToAnon"


class KudosTransferToSelf(KudosValidationError):
    rc = "KudosTransferToSelf"


class NegativeKudosTransfer(KudosValidationError):
    rc = "NegativeKudosTransfer"


class InvalidKudosTransferAmount(KudosValidationError):
    rc = "InvalidKudosTransferAmount"


class KudosTransferNotEnough(KudosValidationError):
    rc = "KudosTransferNotEnough"


class SharedKeyExpired(HordeError):
    """A request paid with an expired shared key (403); a transfer to one is a KudosValidationError (400)."""

    status = 403
    rc = "SharedKeyExpired"


class SharedKeyEmpty(HordeError):
    status = 403
    rc = "SharedKeyEmpty"


class SharedKeyInsufficientKudos(HordeError):
    """The shared key's kudos left, less what its requests still running hold, are below the request's estimate."""

    status = 403
    rc = "SharedKeyInsufficientKudos"


class NoSharedKeyModSelected(HordeError):
    rc = "NoSharedKeyModSelected"


# -- Moderation: roles' refusals, flags, IP timeouts, modes, awards (docs/reference/moderation.md) ---------------


class AnonForbiddenUser(AnonForbidden):
    rc = "AnonForbiddenUser"


class CannotDeleteMod(Forbidden):
    rc = "CannotDeleteMod"


class NoUserModSelected(HordeError):
    rc = "NoUserModSelected"


class TooLongUserName(HordeError):
    rc = "TooLongUserName"


class NoHordeModSelected(HordeError):
    rc = "NoHordeModSelected"


class MaintenanceMode(HordeError):
    """The Horde is in maintenance: no new generation request; those waiting or running finish."""

    status = 503
    rc = "MaintenanceMode"
    should_retry = False
    RETRY_AFTER_S = 60

    def __init__(self, message: str) -> None:
        super().__init__(message, headers={"Retry-After": str(self.RETRY_AFTER_S)})


class NotTrusted(HordeError):
    status = 403
    rc = "NotTrusted"


class TimeoutIP(HordeError):
    status = 403
    rc = "TimeoutIP"


class TooManyPrompts(HordeError):
    """More of the user's requests in flight than its concurrency (PUT /users/{id} `concurrency`)."""

    status = 429
    rc = "TooManyPrompts"


class WorkerInviteOnly(HordeError):
    status = 403
    rc = "WorkerInviteOnly"


class WorkerFlaggedMaintenance(HordeError):
    status = 403
    rc = "WorkerFlaggedMaintenance"


class NotAllowedAwards(HordeError):
    status = 403
    rc = "NotAllowedAwards"


class InvalidAwardUsername(KudosValidationError):
    rc = "InvalidAwardUsername"


class KudosAwardToAnon(KudosValidationError):
    rc = "KudosAwardToAnon"


class SourceAccountFlagged(KudosValidationError):
    rc = "SourceAccountFlagged"


class TargetAccountFlagged(KudosValidationError):
    rc = "TargetAccountFlagged"


class RequestTimeout(HordeError):
    """The body did not arrive within HORDE_HTTP_BODY_TIMEOUT_S of the head; the connection closes."""

    status = 408
    rc = "request_timeout"


class RequestHeaderFieldsTooLarge(HordeError):
    """The request line and header block above HORDE_MAX_HEADER_BYTES, or more than 100 header lines."""

    status = 431
    rc = "request_header_fields_too_large"


class TransferCodingNotImplemented(HordeError):
    """A transfer coding other than chunked (gzip, a misspelt one): the body's length cannot be known."""

    status = 501
    rc = "transfer_coding_not_implemented"


class HttpVersionNotSupported(HordeError):
    status = 505
    rc = "http_version_not_supported"


class TooManyConnections(HordeError):
    """The process is at its connection cap and every connection it holds is answering a request."""

    status = 503
    rc = "too_many_connections"


class FileNotFound(HordeError):
    """The first of the Batch API's codes (its files and batches: docs/reference/batches.md)."""

    status = 404
    rc = "file_not_found"


class FileTooLarge(HordeError):
    status = 413
    rc = "file_too_large"


class FileStoreFull(HordeError):
    status = 403
    rc = "file_store_full"


class FileInUse(HordeError):
    status = 409
    rc = "file_in_use"


class BatchNotFound(HordeError):
    status = 404
    rc = "batch_not_found"


class BatchNotCancellable(HordeError):
    status = 409
    rc = "batch_not_cancellable"


class TooManyBatches(HordeError):
    status = 429
    rc = "batch_limit_exceeded"


class BatchInputError(HordeError):
    """An input file refused at validation; its code is invalid_file or one of horde/batches/validation.py's."""

    rc = "invalid_file"

    def __init__(self, message: str, *, code: str | None = None, param: str | None = None):
        super().__init__(message, param=param)
        self.rc = code or type(self).rc


class BatchLineCancelled(HordeError):
    rc = "batch_cancelled"


class BatchLineExpired(HordeError):
    rc = "batch_expired"


# -- Registration, invites, key rotation and sign-in (docs/reference/accounts.md#registration) ---------------------


class RegistrationClosed(HordeError):
    """HORDE_REGISTRATION=closed (or a mode of the moderators that closes it): no new account."""

    status = 403
    rc = "RegistrationClosed"


class InvalidInviteCode(HordeError):
    """HORDE_REGISTRATION=invite and the body's `invite_code` is missing, unknown, used up or expired."""

    status = 403
    rc = "InvalidInviteCode"


class TooManyRegistrations(HordeError):
    """The client address made HORDE_REGISTRATIONS_PER_ADDRESS_PER_DAY accounts today (UTC); Retry-After says when
    the next day begins."""

    status = 429
    rc = "TooManyRegistrations"


class SignInRequired(HordeError):
    """A route of the OpenID Connect sign-in called without a live sign-in session (its cookie missing, altered or
    expired, or the session ended)."""

    status = 401
    rc = "SignInRequired"


class InvalidCsrfToken(HordeError):
    """A change through the sign-in session without the session's `X-CSRF-Token` header."""

    status = 403
    rc = "InvalidCsrfToken"


def all_return_codes() -> list[type[HordeError]]:
    """Every error class, for the docs test that keeps README_return_codes.md complete."""
    seen, stack = [], [HordeError]
    while stack:
        cls = stack.pop()
        seen.append(cls)
        stack.extend(cls.__subclasses__())
    return seen
