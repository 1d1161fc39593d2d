"""Refusals of workers and their jobs: names, pops and submits, maintenance, teams."""

from __future__ import annotations

from horde.errors.base import HordeError


class AnonForbiddenWorker(HordeError):
    status = 403
    rc = "AnonForbiddenWorker"


class WorkerNameTaken(HordeError):
    status = 403
    rc = "WorkerNameTaken"


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


class WorkerInviteOnly(HordeError):
    status = 403
    rc = "WorkerInviteOnly"


class WorkerFlaggedMaintenance(HordeError):
    status = 403
    rc = "WorkerFlaggedMaintenance"
