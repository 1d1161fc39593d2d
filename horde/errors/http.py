"""Refusals of a connection or its framing (RFC 9112), before any route runs."""

from __future__ import annotations

from horde.errors.base import HordeError


class RequestTooLarge(HordeError):
    """A body above HORDE_MAX_BODY_BYTES; the connection closes without reading the rest."""

    status = 413
    rc = "request_too_large"


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
