"""Refusals of the file store and the Batch API."""

from __future__ import annotations

from horde.errors.base import HordeError


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
