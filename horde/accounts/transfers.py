"""POST /kudos/transfer: a user sends kudos to another user, or to another user's shared key, with the AI Horde's
rules and return codes (each refusal a 400 of the KudosValidationError family).

A flagged sender or recipient is refused (SourceAccountFlagged, TargetAccountFlagged) by the move's own
compare-and-set (horde/accounts/service.py gift); a deleted user is no recipient (InvalidTargetUsername).

Not enforced here, unlike the AI Horde: its anti-abuse rules (a transfer back to a user who sent kudos within a
minute, TooFastKudosTransfers; one transfer a second per key), and its checks of what this Horde has no notion
of (suspicious and education accounts).
"""

from __future__ import annotations

from sqlalchemy.orm import Session

from horde import errors
from horde.accounts import names, shared_keys
from horde.accounts import service as accounts
from horde.accounts.identity import Identity
from horde.accounts.models import SharedKey, User
from horde.authz.check import authorize
from horde.authz.rules import Action
from horde.timeutil import utcnow


def send(session: Session, sender: Identity, recipient: str, amount: int) -> int:
    """Send `amount` kudos from `sender` to `recipient` (`name#id`, or a shared key's id: its owner receives the
    kudos and the key's limit rises by them); the amount sent. The sender's balance never goes below zero: the
    move is a compare-and-set in SQL (horde/accounts/service.py, gift)."""
    authorize(sender, Action.TRANSFER_KUDOS)
    user, key_id = _recipient(session, recipient)
    if user.anonymous:
        raise errors.KudosTransferToAnon("Tried to burn kudos via sending to Anonymous. Aborting.")
    if user.id == sender.id:
        raise errors.KudosTransferToSelf("Cannot send kudos to yourself.")
    if amount < 0:
        raise errors.NegativeKudosTransfer("The amount of kudos to transfer cannot be negative.")
    if amount == 0:
        raise errors.InvalidKudosTransferAmount("Transfer amount must be positive.")
    accounts.gift(session, sender.id, user.id, amount)
    if key_id is not None:
        shared_keys.top_up(session, key_id, amount)
    return amount


def _recipient(session: Session, recipient: str) -> tuple[User, str | None]:
    """The user `recipient` names, and the shared key when it names one (the AI Horde looks up a user first)."""
    public = names.id_in_alias(recipient)
    user = names.by_public_id(session, public) if public is not None else None
    if user is not None:
        return user, None
    key_id = shared_keys.canonical_id(recipient)
    owner = shared_keys.owner_of(session, key_id) if key_id else None
    if key_id is None or owner is None:
        raise errors.InvalidTargetUsername("Invalid target username.", param="username")
    key = session.get_one(SharedKey, key_id)
    if key.expires_at is not None and key.expires_at <= utcnow():
        raise errors.SharedKeyExpired("This shared key has expired.", status=errors.KudosValidationError.status)
    return owner, key_id
