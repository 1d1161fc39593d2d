"""The one check every route that changes state makes: the caller against the action's row of the table."""

from __future__ import annotations

from horde import errors
from horde.authz.roles import Caller, KeyKind, Role, at_least, effective_role, key_kind
from horde.authz.rules import TABLE, Action, Rule, Who

SHARED_KEY_REFUSAL = "A shared key cannot do this; send the owner's API key."


def permits(rule: Rule, kind: KeyKind, role: Role, *, is_owner: bool) -> bool:
    """Whether a caller of that key kind and role, owning the target or not, may take the action."""
    if kind is KeyKind.SHARED and not rule.shared_key:
        return False
    if rule.who is Who.ANYONE:
        return True
    if kind is KeyKind.ANONYMOUS:
        return False
    if kind is KeyKind.SHARED:  # a shared key acts as its owner, with no role
        role = Role.USER
    return {
        Who.USER: True,
        Who.OWNER: is_owner,
        Who.OWNER_OR_MODERATOR: is_owner or at_least(role, Role.MODERATOR),
        Who.OWNER_OR_ADMIN: is_owner or at_least(role, Role.ADMIN),
        Who.MODERATOR: at_least(role, Role.MODERATOR),
        Who.ADMIN: at_least(role, Role.ADMIN),
    }[rule.who]


def refusal(rule: Rule, kind: KeyKind) -> errors.HordeError:
    """What a caller of that key kind is answered when `permits` says no."""
    if kind is KeyKind.SHARED and not rule.shared_key:
        return errors.InvalidAPIKey(SHARED_KEY_REFUSAL)
    if kind is KeyKind.ANONYMOUS:
        return rule.anonymous_refusal(rule.anonymous_denied)
    return rule.refusal(rule.denied)


def authorize(caller: Caller, action: Action, *, owner_id: int | None = None) -> None:
    """Raise the action's refusal unless the table lets `caller` take it; `owner_id`: the user who owns the target
    (a worker's owner, a key's owner, the user a route changes), for the rows that ask for ownership. A flagged
    caller (its own key or a shared key of it) is refused the actions a flag forbids."""
    rule = TABLE[action]
    if not may(caller, action, owner_id=owner_id):
        raise refusal(rule, key_kind(caller))
    if rule.flagged_refusal is not None and getattr(caller, "flagged", False):
        raise rule.flagged_refusal(rule.flagged_denied)


def may(caller: Caller, action: Action, *, owner_id: int | None = None) -> bool:
    """`authorize` as a question, for what a route shows rather than refuses (a user's own view of itself)."""
    kind = key_kind(caller)
    is_owner = owner_id is not None and caller.id == owner_id and kind is not KeyKind.ANONYMOUS
    return permits(TABLE[action], kind, effective_role(caller), is_owner=is_owner)
