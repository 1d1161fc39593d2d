"""Account operations. Callers pass a session; the caller's transaction commits."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from sqlalchemy import (
    CTE,
    BigInteger,
    Boolean,
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
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session
from sqlalchemy.orm.attributes import set_committed_value

from horde import errors
from horde.accounts import moves
from horde.accounts.keys import ANONYMOUS_API_KEY, ANONYMOUS_USERNAME, hash_api_key, new_api_key
from horde.accounts.models import KudosEntry, SharedKey, User
from horde.accounts.moves import Kind, Move
from horde.storage import precompiled
from horde.storage.database import is_postgresql, table_of
from horde.timeutil import utcnow

#: The range of every stored amount of kudos (a balance, a ledger entry, a shared key's limit): 64-bit integers.
MAX_KUDOS = 2**63 - 1
#: PostgreSQL's SQLSTATE for arithmetic past a column's range (numeric_value_out_of_range).
_OUT_OF_RANGE_SQLSTATE = "22003"


@contextlib.contextmanager
def out_of_range_refused() -> Iterator[None]:
    """A move that would take a balance or a total past the 64-bit range is the caller's 400, never a 500: on
    PostgreSQL the database refuses the arithmetic (the transaction then rolls back as any refusal's does)."""
    try:
        yield
    except DBAPIError as error:
        if getattr(error.orig, "sqlstate", None) != _OUT_OF_RANGE_SQLSTATE:
            raise
        raise _past_range() from None


def _past_range() -> errors.HordeError:
    return errors.BadRequest(
        f"That would take a balance of kudos past {MAX_KUDOS:,}, the most this Horde can hold.", param="amount"
    )


def _within_range(balance: Any) -> int:
    """SQLite keeps an integer past the 64-bit range as a float instead of refusing it: refuse it here."""
    if isinstance(balance, float) or not -MAX_KUDOS - 1 <= balance <= MAX_KUDOS:
        raise _past_range()
    return int(balance)


def ensure_anonymous_user(session: Session) -> User:
    user = session.scalar(select(User).where(User.anonymous.is_(True)))
    if user is None:
        user = User(username=ANONYMOUS_USERNAME, api_key_hash=hash_api_key(ANONYMOUS_API_KEY), kudos=0, anonymous=True)
        session.add(user)
        session.flush()
    return user


def create_user(
    session: Session, username: str, *, kudos: int = 0, trusted: bool = False, unique_name: bool = True
) -> tuple[User, str]:
    """Create a user and return it with its API key, which is never stored in clear; `kudos` is granted on the
    ledger. Names may repeat (`name#id` tells users apart); the operator's command line asks for a `unique_name`,
    so that its other commands can name the user alone (docs/reference/accounts.md#registration)."""
    if unique_name and session.scalar(select(User.id).where(User.username == username).limit(1)) is not None:
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
    """The user named `username`, or `name#id` (the AI Horde's unique alias) where names repeat."""
    named = session.scalars(
        select(User).where(User.username == username, User.anonymous.is_(False), User.deleted_at.is_(None)).limit(2)
    ).all()
    if len(named) > 1:
        raise errors.BadRequest(f"Several users are named '{username}'; name one as name#id.", param="username")
    if named:
        return named[0]
    name, separator, number = username.rpartition("#")
    if separator and number.isascii() and number.isdecimal() and len(number) <= 10:
        user = session.get(User, int(number))
        if user is not None and not user.anonymous and user.deleted_at is None and user.username == name:
            return user
    raise errors.UserNotFound(f"No user named '{username}'.")


def move_kudos(
    session: Session,
    user: User,
    amount: int,
    *,
    kind: str,
    request_id: str | None = None,
    counterpart_id: int | None = None,
) -> None:
    """The only way a balance changes: one ledger entry and the same amount added in SQL, in one transaction.

    The addition happens in the database (`kudos = kudos + amount`), never from a value read earlier, so
    concurrent moves on one user all count and the balance stays the sum of its entries. The same statement adds
    to the user's running totals (horde/accounts/moves.py).
    """
    if amount == 0:
        return
    session.add(
        KudosEntry(user_id=user.id, amount=amount, kind=kind, request_id=request_id, counterpart_id=counterpart_id)
    )
    added = moves.deltas(Move(user.id, amount, kind))
    with out_of_range_refused():
        balance = session.execute(
            update(User)
            .where(User.id == user.id)
            .values({column: getattr(User, column) + value for column, value in added.items()})
            .returning(User.kudos),
            execution_options={"synchronize_session": False},
        ).scalar_one()
    set_committed_value(user, "kudos", _within_range(balance))


_USERS, _LEDGER, _SHARED_KEYS = table_of(User), table_of(KudosEntry), table_of(SharedKey)
#: The users' columns a move adds to: the balance and its running totals.
_ADDED_COLUMNS = ("kudos", *moves.TOTALS)


def _added(prefix: str) -> dict[str, ColumnElement[Any]]:
    """SET clauses adding bind parameter `{prefix}{column}` to each of _ADDED_COLUMNS."""
    return {
        column: _USERS.c[column] + bindparam(f"{prefix}{column}", type_=_USERS.c[column].type)
        for column in _ADDED_COLUMNS
    }


def _added_params(prefix: str, added: dict[str, int]) -> dict[str, int]:
    return {f"{prefix}{column}": value for column, value in added.items()}


#: Built once (memoized cache keys): settlement runs on every submitted reply.
_ADD_TO_BALANCE = update(_USERS).where(_USERS.c.id == bindparam("user")).values(_added("add_"))
_RECORD = insert(_LEDGER)
#: PostgreSQL: one move in one statement, the ledger entry written by a data-modifying WITH.
_MOVE_WITH_ITS_ENTRY = _ADD_TO_BALANCE.add_cte(
    insert(_LEDGER)
    .values(
        user_id=bindparam("user"),
        amount=bindparam("add_kudos"),
        kind=bindparam("kind"),
        request_id=bindparam("request"),
        created_at=bindparam("at"),
    )
    .cte("entry")
)
#: A request paid with a shared key: its charge added to what the key has utilized (the admission held it,
#: horde/accounts/shared_keys.py).
_USE_SHARED_KEY = (
    update(_SHARED_KEYS)
    .where(_SHARED_KEYS.c.id == bindparam("shared_key", type_=String))
    .values(utilized=_SHARED_KEYS.c.utilized + bindparam("key_charge", type_=BigInteger))
)


def transfer(
    session: Session, moves_made: list[Move] | list[tuple], *, request_id: str, shared_key_id: str | None = None
) -> None:
    """Move kudos for a request: each Move (user id, amount, kind, tokens) adds `amount` in SQL, with its ledger
    entry and the user's running totals, in the caller's transaction; with `shared_key_id`, the charge is also
    added to what that key has utilized. The users are updated in id order, so two transfers never wait on each
    other crosswise; zero amounts are skipped, as in move_kudos."""
    made = sorted(Move(*move) for move in moves_made if move[1])
    if not made:
        return
    connection, now = session.connection(), utcnow()
    if is_postgresql(session):
        if len(made) == 2:  # a charge and its reward: one statement, one round trip
            statement = _PAIRED_TRANSFER_WITH_KEY if shared_key_id else _PAIRED_TRANSFER
            params = paired_transfer_params(made, request_id=request_id, shared_key_id=shared_key_id)
            precompiled.execute(connection, statement, params)
            return
        for move in made:  # a statement per move, in id order: one round trip each
            params = {"user": move.user_id, "kind": move.kind, "request": request_id, "at": now}
            precompiled.execute(connection, _MOVE_WITH_ITS_ENTRY, params | _added_params("add_", moves.deltas(move)))
    else:  # SQLite: in-process, so fewer calls matter more than statements
        precompiled.execute_many(
            connection,
            _ADD_TO_BALANCE,
            [{"user": move.user_id} | _added_params("add_", moves.deltas(move)) for move in made],
        )
        precompiled.execute_many(
            connection,
            _RECORD,
            [
                {"user_id": move.user_id, "amount": move.amount, "kind": move.kind, "request_id": request_id}
                | {"created_at": now}
                for move in made
            ],
        )
    if shared_key_id:
        precompiled.execute(connection, _USE_SHARED_KEY, {"shared_key": shared_key_id, "key_charge": _charge(made)})


def _charge(made: list[Move]) -> int:
    """What the requester paid of `made`: the kudos a shared key utilizes."""
    return -sum(move.amount for move in made if move.kind == Kind.CHARGE)


def paired_transfer_ctes(condition: ColumnElement[bool], *, shared_key: bool = False) -> list[CTE]:
    """PostgreSQL: a charge and its reward (two moves) as data-modifying WITH clauses that run only when
    `condition` holds, for a caller that settles in the same statement as its own compare-and-set. Bind
    them with paired_transfer_params. Like transfer: each balance and its totals change by addition in SQL,
    with its entries, users in id order (the clauses run in the order listed), zero amounts skipped; with
    `shared_key`, the charge is added to what the key (bind parameter `shared_key`) has utilized, last (the lock
    order of every settlement: users, then the key)."""
    entries = [
        select(
            bindparam(f"entry{n}_user", type_=Integer),
            bindparam(f"entry{n}_amount", type_=BigInteger),
            bindparam(f"entry{n}_kind", type_=String),
            bindparam("request", type_=String),
            bindparam("at", type_=DateTime),
        ).where(bindparam(f"entry{n}_amount", type_=BigInteger) != 0, condition)
        for n in (1, 2)
    ]
    columns = ["user_id", "amount", "kind", "request_id", "created_at"]
    ctes = [insert(_LEDGER).from_select(columns, union_all(*entries)).cte("paired_entries")]
    for n in (1, 2):
        changes = bindparam(f"balance{n}_changes", type_=Boolean)
        add = (
            update(_USERS)
            .where(_USERS.c.id == bindparam(f"balance{n}_user", type_=Integer), changes, condition)
            .values(_added(f"balance{n}_"))
        )
        ctes.append(add.cte(f"paired_balance{n}"))
    if shared_key:
        ctes.append(_USE_SHARED_KEY.where(condition).cte("shared_key_used"))
    return ctes


#: PostgreSQL: two moves (paired_transfer_ctes) as a statement of their own, for transfer.
_PAIRED_TRANSFER = select(literal(1)).add_cte(*paired_transfer_ctes(true()))
_PAIRED_TRANSFER_WITH_KEY = select(literal(1)).add_cte(*paired_transfer_ctes(true(), shared_key=True))


def paired_transfer_params(
    moves_made: list[Move] | list[tuple], *, request_id: str, shared_key_id: str | None = None
) -> dict[str, Any]:
    """The bind parameters of paired_transfer_ctes for two Moves; a user on both sides gets both entries and one
    change of the net amounts (a row changes once per statement). With `shared_key_id`, those of its shared-key
    clause too."""
    made = [Move(*move) for move in moves_made]
    if len(made) != 2:
        raise ValueError("a paired transfer moves kudos twice: a charge and its reward")
    params: dict[str, Any] = {"request": request_id, "at": utcnow()}
    for n, move in enumerate(made, start=1):
        params |= {f"entry{n}_user": move.user_id, f"entry{n}_amount": move.amount, f"entry{n}_kind": move.kind}
    net = list(moves.net_by_user([move for move in made if move.amount]).items())
    net += [(made[0].user_id, dict.fromkeys(_ADDED_COLUMNS, 0))] * (2 - len(net))  # a second change of none
    for n, (user_id, added) in enumerate(net, start=1):
        params |= {f"balance{n}_user": user_id, f"balance{n}_changes": any(added.values())}
        params |= _added_params(f"balance{n}_", added)
    if shared_key_id:
        params |= {"shared_key": shared_key_id, "key_charge": _charge(made)}
    return params


#: A user's gift (POST /kudos/transfer) taken from the sender only while its balance holds it and no moderator
#: flagged it: a compare-and-set.
_UNFLAGGED = _USERS.c.flagged.is_(False)
_TAKE_WITHIN_BALANCE = _ADD_TO_BALANCE.where(_USERS.c.kudos >= bindparam("at_least", type_=BigInteger), _UNFLAGGED)
#: ... and given to the recipient only while its balance stays in range (SQLite would turn it into a float) and no
#: moderator flagged it.
_GIVE_WITHIN_RANGE = _ADD_TO_BALANCE.where(_USERS.c.kudos <= bindparam("at_most", type_=BigInteger), _UNFLAGGED)
_FLAGGED = select(_USERS.c.flagged).where(_USERS.c.id == bindparam("user"))


def gift(session: Session, sender_id: int, recipient_id: int, amount: int) -> None:
    """Move `amount` kudos from one user to another, with an entry each side (gifted, received), in the caller's
    transaction: the sender's balance is taken from only while it holds `amount` (compare-and-set in SQL, so
    concurrent gifts never take it below zero), and the two rows are updated in id order, so crossing gifts
    never wait on each other crosswise. KudosTransferNotEnough when the sender holds less: raised within the
    caller's transaction, which then rolls back whatever this wrote. A flagged sender or recipient is refused the
    same way, by the same compare-and-set (SourceAccountFlagged, TargetAccountFlagged)."""
    connection, now = session.connection(), utcnow()
    sent, received = Move(sender_id, -amount, Kind.GIFTED), Move(recipient_id, amount, Kind.RECEIVED)
    for move in sorted((sent, received)):
        params = {"user": move.user_id} | _added_params("add_", moves.deltas(move))
        if move is sent:
            statement, params, refusal = _TAKE_WITHIN_BALANCE, params | {"at_least": amount}, _not_enough
        else:
            statement, params, refusal = _GIVE_WITHIN_RANGE, params | {"at_most": MAX_KUDOS - amount}, _past_range
        with out_of_range_refused():
            if precompiled.execute(connection, statement, params).rowcount != 1:
                if precompiled.execute(connection, _FLAGGED, {"user": move.user_id}).scalar():
                    raise _flagged(sender=move is sent)
                raise refusal()
    entries = [
        {"user_id": move.user_id, "amount": move.amount, "kind": move.kind, "request_id": None, "created_at": now}
        | {"counterpart_id": other}
        for move, other in ((sent, recipient_id), (received, sender_id))
    ]
    precompiled.execute_many(connection, _RECORD, entries)


def _flagged(*, sender: bool) -> errors.HordeError:
    if sender:
        return errors.SourceAccountFlagged(
            "Your account has been flagged for suspicious activity: it cannot send kudos. Please contact the mods."
        )
    return errors.TargetAccountFlagged(
        "The target account has been flagged for suspicious activity: it cannot receive kudos."
    )


def _not_enough() -> errors.HordeError:
    return errors.KudosTransferNotEnough("Not enough kudos.")


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
