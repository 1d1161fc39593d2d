"""Refusals of accounts: keys, roles, kudos transfers and awards, shared keys, moderation, registration, sign-in."""

from __future__ import annotations

from horde.errors.base import AnonForbidden, Forbidden, HordeError


class InvalidAPIKey(HordeError):
    status = 401
    rc = "InvalidAPIKey"


class InvalidAuthorizationHeader(HordeError):
    status = 401
    rc = "InvalidAuthorizationHeader"


class UserNotFound(HordeError):
    status = 404
    rc = "UserNotFound"


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


class NotTrusted(HordeError):
    status = 403
    rc = "NotTrusted"


class TimeoutIP(HordeError):
    status = 403
    rc = "TimeoutIP"


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
