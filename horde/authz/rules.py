"""The authorization table: for every action that changes state, who may take it, whether a shared key counts,
and how a refusal reads. The one place that says so; check.py applies it, tests/integration/authz walks every
state-changing route through it with an own key, another user's key, a shared key, no key, a moderator and an
admin (docs/reference/accounts.md shows it as a table).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum, StrEnum

from horde import errors


class Action(StrEnum):
    """What a route does, as the table knows it."""

    GENERATE = "generate"  # queue a chat or text request (the native APIs and /v1)
    #: Cancel a request (DELETE .../status/{id}) or delete a stored response (DELETE /v1/responses/{id}): the route
    #: finds it among the caller's own (chat requests, responses) or by its id alone (text: the AI Horde's rule).
    MANAGE_OWN_REQUEST = "manage_own_request"
    RUN_WORKER = "run_worker"  # a worker's pop, progress, submit and fault
    SET_WORKER_MAINTENANCE = "set_worker_maintenance"
    SET_WORKER_INFO = "set_worker_info"
    RENAME_WORKER = "rename_worker"
    SET_WORKER_TEAM = "set_worker_team"
    PAUSE_WORKER = "pause_worker"
    DELETE_WORKER = "delete_worker"
    TRANSFER_KUDOS = "transfer_kudos"
    CREATE_SHARED_KEY = "create_shared_key"
    CHANGE_SHARED_KEY = "change_shared_key"  # PATCH or DELETE one
    REGISTER = "register"  # POST /api/v2/register and the AI Horde's form, POST /register: no key is read
    ROTATE_API_KEY = "rotate_api_key"
    #: A new key or signing out through the web page's sign-in session (/api/v2/oidc/...): the session's cookie and
    #: its CSRF token decide (horde/registration/signin.py), never a key.
    MANAGE_SIGN_IN = "manage_sign_in"
    MODIFY_USER = "modify_user"  # PUT /users/{id}: the moderators' fields
    MODIFY_USER_AS_ADMIN = "modify_user_as_admin"  # PUT /users/{id}: kudos, usage_multiplier, moderator
    DELETE_USER = "delete_user"
    TIME_OUT_ADDRESS = "time_out_address"  # /operations/ipaddr
    BLOCK_WORKER_ADDRESS = "block_worker_address"  # /operations/block_worker_ipaddr/{worker_id}
    SET_MODES = "set_modes"  # PUT /status/modes
    AWARD_KUDOS = "award_kudos"  # POST /kudos/award
    READ_AUDIT = "read_audit"  # GET /operations/audit: moderators only, though it changes nothing
    MANAGE_FILES = "manage_files"  # /v1/files: upload, list, read, delete one's own
    RUN_BATCHES = "run_batches"  # /v1/batches: create, list, read, cancel one's own
    #: PUT /users/{id}: the fields the user sets of itself (username, contact, public_workers), or a moderator.
    SET_USER_PROFILE = "set_user_profile"
    #: See what only moderators see, though it changes nothing: raid mode (GET /status/modes), a worker's pause, a
    #: user's deleted account and the moderators' note on it.
    MODERATOR_VIEW = "moderator_view"
    #: Read a user's private account (the console's ledger, balance history, usage and workers): though it changes
    #: nothing, only the user's own key or a moderator's; a shared key never reads its owner's account.
    VIEW_ACCOUNT = "view_account"


class Who(Enum):
    """Who may take an action, besides the key-kind rule. Higher roles include lower ones (roles.ROLE_RANK)."""

    ANYONE = "anyone"  # no key needed
    USER = "user"  # any user's own key
    OWNER = "owner"  # the target's owner (a worker's, a key's, the user themself)
    OWNER_OR_MODERATOR = "owner or moderator"
    OWNER_OR_ADMIN = "owner or admin"
    MODERATOR = "moderator"
    ADMIN = "admin"


@dataclass(frozen=True)
class Rule:
    who: Who
    #: Whether one of the owner's shared keys may take it (as the owner). A shared key lends kudos for requests:
    #: it never manages what its owner has, and never carries its owner's role.
    shared_key: bool = False
    #: The refusal of a caller whose role or ownership falls short, and its message.
    refusal: type[errors.HordeError] = errors.Forbidden
    denied: str = "You may not do this."
    #: The refusal of the anonymous user, where a user is needed.
    anonymous_refusal: type[errors.HordeError] = errors.AnonForbidden
    anonymous_denied: str = "The anonymous user cannot do this; send an API key."
    #: The refusal of a user a moderator flagged (PUT /users/{id} `flagged`), where a flag forbids the action; None:
    #: a flag changes nothing here. Read from the caller's identity, which a flag empties in every process.
    flagged_refusal: type[errors.HordeError] | None = None
    flagged_denied: str = "Your account has been flagged for suspicious activity. Please contact the moderators."


def _moderators_only(refusal: type[errors.HordeError], denied: str, who: Who = Who.MODERATOR) -> Rule:
    """An action of moderators (or admins): the anonymous user is answered as any user who is not one, as the AI
    Horde answers its anonymous key."""
    return Rule(who, refusal=refusal, denied=denied, anonymous_refusal=refusal, anonymous_denied=denied)


def _worker_owner_or_moderator(refusal: type[errors.HordeError], denied: str) -> Rule:
    """A change of a worker: its owner's own key or a moderator's, with the AI Horde's code for the change (the
    anonymous user, which owns no worker, is answered the same)."""
    return Rule(
        Who.OWNER_OR_MODERATOR, refusal=refusal, denied=denied, anonymous_refusal=refusal, anonymous_denied=denied
    )


TABLE: dict[Action, Rule] = {
    Action.GENERATE: Rule(Who.ANYONE, shared_key=True),
    Action.MANAGE_OWN_REQUEST: Rule(Who.ANYONE, shared_key=True),  # a shared key's requests are its owner's
    Action.RUN_WORKER: Rule(
        Who.USER,
        anonymous_refusal=errors.AnonForbiddenWorker,
        anonymous_denied="The anonymous user cannot run workers.",
        flagged_refusal=errors.WorkerFlaggedMaintenance,
        flagged_denied="Your user has been flagged by the moderators for suspicious activity: your workers take no "
        "jobs. Please contact the moderators.",
    ),
    Action.SET_WORKER_MAINTENANCE: _worker_owner_or_moderator(
        errors.NotOwner, "Only the worker's owner or a moderator may put it into maintenance or take it out."
    ),
    Action.SET_WORKER_INFO: _worker_owner_or_moderator(
        errors.NotOwner, "Only the worker's owner or a moderator may set its info."
    ),
    Action.RENAME_WORKER: _worker_owner_or_moderator(
        errors.NotModerator, "Only the worker's owner or a moderator may rename it."
    ),
    Action.SET_WORKER_TEAM: _worker_owner_or_moderator(
        errors.NotModerator, "Only the worker's owner or a moderator may change its team."
    ),
    Action.PAUSE_WORKER: _moderators_only(errors.NotModerator, "Only a moderator may pause a worker."),
    Action.DELETE_WORKER: _worker_owner_or_moderator(
        errors.NotModerator, "Only the worker's owner or a moderator may delete it."
    ),
    Action.TRANSFER_KUDOS: Rule(
        Who.USER,
        anonymous_refusal=errors.KudosTransferFromAnon,
        anonymous_denied="You cannot transfer Kudos from Anonymous.",
        flagged_refusal=errors.SourceAccountFlagged,
        flagged_denied="Your account has been flagged for suspicious activity: it cannot send kudos. Please contact "
        "the moderators.",
    ),
    Action.CREATE_SHARED_KEY: Rule(Who.USER, anonymous_denied="The anonymous user cannot have shared keys."),
    Action.CHANGE_SHARED_KEY: Rule(
        Who.OWNER,
        denied="This shared key belongs to another user.",
        anonymous_denied="The anonymous user cannot have shared keys.",
    ),
    Action.REGISTER: Rule(Who.ANYONE, shared_key=True),
    Action.MANAGE_SIGN_IN: Rule(Who.ANYONE, shared_key=True),
    Action.ROTATE_API_KEY: Rule(
        Who.OWNER,
        refusal=errors.Forbidden,
        denied="Only the user themself may replace their API key.",
        anonymous_denied="The anonymous user has no key of its own.",
    ),
    Action.MODIFY_USER: _moderators_only(errors.NotModerator, "Only a moderator may change a user."),
    Action.MODIFY_USER_AS_ADMIN: _moderators_only(
        errors.NotAdmin, "Only an admin may change a user's kudos, usage multiplier or moderator role.", Who.ADMIN
    ),
    Action.SET_USER_PROFILE: _moderators_only(
        errors.NotModerator,
        "Only the user themself or a moderator may change a user's name, contact or public workers.",
        Who.OWNER_OR_MODERATOR,
    ),
    Action.DELETE_USER: Rule(
        Who.OWNER_OR_ADMIN,
        refusal=errors.NotAdmin,
        denied="Only the user themself or an admin may delete a user.",
        anonymous_refusal=errors.AnonForbiddenUser,
        anonymous_denied="The anonymous user cannot delete a user.",
    ),
    Action.TIME_OUT_ADDRESS: _moderators_only(errors.NotModerator, "Only a moderator may time out an address."),
    Action.BLOCK_WORKER_ADDRESS: _moderators_only(
        errors.NotModerator, "Only a moderator may block a worker's address."
    ),
    Action.SET_MODES: _moderators_only(errors.NotAdmin, "Only an admin may change the Horde's modes.", Who.ADMIN),
    Action.AWARD_KUDOS: _moderators_only(
        errors.NotAllowedAwards, "Only a moderator may award kudos; transfer them instead (POST /kudos/transfer)."
    ),
    Action.MANAGE_FILES: Rule(
        Who.USER,
        shared_key=True,  # a shared key's files are its owner's, as its requests are
        anonymous_denied="The anonymous user cannot keep files: use an API key of your own.",
    ),
    Action.RUN_BATCHES: Rule(
        Who.USER,
        shared_key=True,  # its lines are paid with the key, within the key's limits
        anonymous_denied="The anonymous user cannot run batches: use an API key of your own.",
    ),
    Action.READ_AUDIT: _moderators_only(errors.NotModerator, "Only a moderator may read the audit trail."),
    Action.MODERATOR_VIEW: _moderators_only(errors.NotModerator, "Only a moderator may see this."),
    Action.VIEW_ACCOUNT: Rule(
        Who.OWNER_OR_MODERATOR,
        denied="Only the user themself or a moderator may read this account.",
        anonymous_denied="The anonymous user cannot read an account; send the user's own API key.",
    ),
}
