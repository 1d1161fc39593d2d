"""Account operations. Callers pass a session; the caller's transaction commits."""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from horde import errors
from horde.accounts.keys import ANONYMOUS_API_KEY, ANONYMOUS_USERNAME, hash_api_key, new_api_key
from horde.accounts.models import KudosEntry, User


def ensure_anonymous_user(session: Session) -> User:
    user = session.scalar(select(User).where(User.anonymous.is_(True)))
    if user is None:
        user = User(username=ANONYMOUS_USERNAME, api_key_hash=hash_api_key(ANONYMOUS_API_KEY),
                    kudos=0, anonymous=True)
        session.add(user)
        session.flush()
    return user


def create_user(session: Session, username: str, *, kudos: int = 0, trusted: bool = False) -> tuple[User, str]:
    """Create a user and return it with its API key, which is never stored in clear."""
    if session.scalar(select(User).where(User.username == username)) is not None:
        raise errors.BadRequest(f"The username '{username}' is taken.", param="username")
    key = new_api_key()
    user = User(username=username, api_key_hash=hash_api_key(key), kudos=0, trusted=trusted)
    session.add(user)
    session.flush()
    if kudos:
        move_kudos(session, user, kudos, kind="grant")
    return user, key


def find_by_key(session: Session, key: str) -> User | None:
    return session.scalar(select(User).where(User.api_key_hash == hash_api_key(key)))


def find_user(session: Session, key: str | None) -> User | None:
    """The user owning `key` (no key: the anonymous user), or None; never writes."""
    if not key or key == ANONYMOUS_API_KEY:
        return session.scalar(select(User).where(User.anonymous.is_(True)))
    return find_by_key(session, key)


def authenticate(session: Session, key: str | None) -> User:
    """The user owning `key`; no key means the anonymous user."""
    if not key or key == ANONYMOUS_API_KEY:
        return ensure_anonymous_user(session)
    user = find_by_key(session, key)
    if user is None:
        raise errors.InvalidAPIKey("No user matching the API key sent.")
    return user


def find_by_name(session: Session, username: str) -> User:
    user = session.scalar(select(User).where(User.username == username))
    if user is None:
        raise errors.UserNotFound(f"No user named '{username}'.")
    return user


def move_kudos(session: Session, user: User, amount: int, *, kind: str, request_id: str | None = None) -> None:
    """The only way a balance changes: one ledger entry and the same amount on the balance."""
    if amount == 0:
        return
    session.add(KudosEntry(user_id=user.id, amount=amount, kind=kind, request_id=request_id))
    user.kudos = (user.kudos or 0) + amount


def set_kudos(session: Session, user: User, balance: int) -> None:
    move_kudos(session, user, balance - (user.kudos or 0), kind="adjustment")


def ledger_sum(session: Session, user: User) -> int:
    total = select(func.coalesce(func.sum(KudosEntry.amount), 0)).where(KudosEntry.user_id == user.id)
    return int(session.scalar(total) or 0)
