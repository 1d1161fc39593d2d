"""Account operations. Callers pass a session; the caller's transaction commits."""

from __future__ import annotations

from typing import Any

from sqlalchemy import (
    CTE,
    ColumnElement,
    DateTime,
    Integer,
    String,
    bindparam,
    func,
    insert,
    literal,
    select,
    true,
    union_all,
    update,
)
from sqlalchemy.orm import Session
from sqlalchemy.orm.attributes import set_committed_value

from horde import errors, precompiled
from horde.accounts.keys import ANONYMOUS_API_KEY, ANONYMOUS_USERNAME, hash_api_key, new_api_key
from horde.accounts.models import KudosEntry, User
from horde.database import is_postgresql, table_of
from horde.timeutil import utcnow


def ensure_anonymous_user(session: Session) -> User:
    user = session.scalar(select(User).where(User.anonymous.is_(True)))
    if user is None:
        user = User(username=ANONYMOUS_USERNAME, api_key_hash=hash_api_key(ANONYMOUS_API_KEY), kudos=0, anonymous=True)
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


def identity_cache_key(key: str | None) -> str:
    """What the identity cache files a key under: its hash (the anonymous user for no key)."""
    return "anonymous" if not key or key == ANONYMOUS_API_KEY else hash_api_key(key)


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
    """The only way a balance changes: one ledger entry and the same amount added in SQL, in one transaction.

    The addition happens in the database (`kudos = kudos + amount`), never from a value read earlier, so
    concurrent moves on one user all count and the balance stays the sum of its entries.
    """
    if amount == 0:
        return
    session.add(KudosEntry(user_id=user.id, amount=amount, kind=kind, request_id=request_id))
    balance = session.execute(
        update(User).where(User.id == user.id).values(kudos=User.kudos + amount).returning(User.kudos),
        execution_options={"synchronize_session": False},
    ).scalar_one()
    set_committed_value(user, "kudos", balance)


_USERS, _LEDGER = table_of(User), table_of(KudosEntry)
#: Built once (memoized cache keys): settlement runs on every submitted reply.
_ADD_TO_BALANCE = (
    update(_USERS).where(_USERS.c.id == bindparam("user")).values(kudos=_USERS.c.kudos + bindparam("moved"))
)
_RECORD = insert(_LEDGER)
#: PostgreSQL: one move in one statement, the ledger entry written by a data-modifying WITH.
_MOVE_WITH_ITS_ENTRY = _ADD_TO_BALANCE.add_cte(
    insert(_LEDGER)
    .values(
        user_id=bindparam("user"),
        amount=bindparam("moved"),
        kind=bindparam("kind"),
        request_id=bindparam("request"),
        created_at=bindparam("at"),
    )
    .cte("entry")
)


def transfer(session: Session, moves: list[tuple[int, int, str]], *, request_id: str) -> None:
    """Move kudos for a request: each (user id, amount, kind) adds `amount` in SQL, with its ledger entry, in
    the caller's transaction. The users are updated in id order, so two transfers never wait on each other
    crosswise; zero amounts are skipped, as in move_kudos."""
    moves = sorted(move for move in moves if move[1])
    if not moves:
        return
    connection, now = session.connection(), utcnow()
    params = [
        {"user": user_id, "moved": amount, "kind": kind, "request": request_id, "at": now}
        for user_id, amount, kind in moves
    ]
    if is_postgresql(session):
        if len(moves) == 2:  # a charge and its reward: one statement, one round trip
            precompiled.execute(connection, _PAIRED_TRANSFER, paired_transfer_params(moves, request_id=request_id))
            return
        for move in params:  # a statement per move, in id order: one round trip each
            precompiled.execute(connection, _MOVE_WITH_ITS_ENTRY, move)
        return
    # SQLite: in-process, so fewer calls matter more than statements
    precompiled.execute_many(connection, _ADD_TO_BALANCE, params)
    precompiled.execute_many(
        connection,
        _RECORD,
        [
            {"user_id": user_id, "amount": amount, "kind": kind, "request_id": request_id, "created_at": now}
            for user_id, amount, kind in moves
        ],
    )


def paired_transfer_ctes(condition: ColumnElement[bool]) -> list[CTE]:
    """PostgreSQL: a charge and its reward (two moves) as data-modifying WITH clauses that run only when
    `condition` holds, for a caller that settles in the same statement as its own compare-and-set. Bind
    them with paired_transfer_params. Like transfer: each balance changes by addition in SQL, with its
    entries, users in id order (the clauses run in the order listed), zero amounts skipped."""
    entries = [
        select(
            bindparam(f"entry{n}_user", type_=Integer),
            bindparam(f"entry{n}_amount", type_=Integer),
            bindparam(f"entry{n}_kind", type_=String),
            bindparam("request", type_=String),
            bindparam("at", type_=DateTime),
        ).where(bindparam(f"entry{n}_amount", type_=Integer) != 0, condition)
        for n in (1, 2)
    ]
    columns = ["user_id", "amount", "kind", "request_id", "created_at"]
    ctes = [insert(_LEDGER).from_select(columns, union_all(*entries)).cte("paired_entries")]
    for n in (1, 2):
        moved = bindparam(f"balance{n}_moved", type_=Integer)
        add = (
            update(_USERS)
            .where(_USERS.c.id == bindparam(f"balance{n}_user", type_=Integer), moved != 0, condition)
            .values(kudos=_USERS.c.kudos + moved)
        )
        ctes.append(add.cte(f"paired_balance{n}"))
    return ctes


#: PostgreSQL: two moves (paired_transfer_ctes) as a statement of their own, for transfer.
_PAIRED_TRANSFER = select(literal(1)).add_cte(*paired_transfer_ctes(true()))


def paired_transfer_params(moves: list[tuple[int, int, str]], *, request_id: str) -> dict[str, Any]:
    """The bind parameters of paired_transfer_ctes for two (user id, amount, kind) moves; a user on both sides
    gets both entries and one change of the net amount (a row changes once per statement)."""
    if len(moves) != 2:
        raise ValueError("a paired transfer moves kudos twice: a charge and its reward")
    params: dict[str, Any] = {"request": request_id, "at": utcnow()}
    for n, (user_id, amount, kind) in enumerate(moves, start=1):
        params |= {f"entry{n}_user": user_id, f"entry{n}_amount": amount, f"entry{n}_kind": kind}
    net: dict[int, int] = {}
    for user_id, amount, _ in moves:
        net[user_id] = net.get(user_id, 0) + amount
    balances = sorted(net.items()) + [(moves[0][0], 0)]  # a user on both sides: the second change is none
    for n, (user_id, amount) in enumerate(balances[:2], start=1):
        params |= {f"balance{n}_user": user_id, f"balance{n}_moved": amount}
    return params


def locked_balance(session: Session, user_id: int, *, lock: bool) -> int:
    """The user's balance as committed; with `lock` (PostgreSQL) the row stays locked until the transaction
    ends, so checks that read it are serialised with every other locker of that user."""
    query = select(User.kudos).where(User.id == user_id)
    return session.scalar(query.with_for_update() if lock else query) or 0


def set_kudos(session: Session, user: User, balance: int) -> None:
    """Set a balance through an adjustment entry of the difference, read under the user's row lock."""
    current = locked_balance(session, user.id, lock=is_postgresql(session))
    move_kudos(session, user, balance - current, kind="adjustment")


def ledger_sum(session: Session, user: User) -> int:
    total = select(func.coalesce(func.sum(KudosEntry.amount), 0)).where(KudosEntry.user_id == user.id)
    return int(session.scalar(total) or 0)
