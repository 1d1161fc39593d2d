"""Refusals of a generation request: its parameters, the models and workers it needs, its lifecycle, idempotency."""

from __future__ import annotations

from horde.errors.base import HordeError


class UnsupportedChatParameter(HordeError):
    rc = "UnsupportedChatParameter"


class ChatRequestConflict(HordeError):
    rc = "ChatRequestConflict"


class KudosUpfront(HordeError):
    status = 403
    rc = "KudosUpfront"


class ModelNotFound(HordeError):
    status = 404
    rc = "model_not_found"


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


class ImageFetchFailed(HordeError):
    rc = "ImageFetchFailed"


class ImageUrlForbidden(HordeError):
    rc = "ImageUrlForbidden"


class ImageTooLarge(HordeError):
    status = 413
    rc = "ImageTooLarge"


class StyleNotFound(HordeError):
    status = 404
    rc = "StyleNotFound"


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


class IdempotencyConflict(HordeError):
    status = 409
    rc = "idempotency_conflict"
    should_retry = False


class InvalidIdempotencyKey(HordeError):
    rc = "BadRequest"


class TooManyPrompts(HordeError):
    """More of the user's requests in flight than its concurrency (PUT /users/{id} `concurrency`)."""

    status = 429
    rc = "TooManyPrompts"
