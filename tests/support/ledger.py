"""The kudos invariant as a standing check: every balance equals the sum of its user's ledger entries, and every
running total of a user (horde/accounts/moves.py) the sum of its entries of the kinds it counts."""

from __future__ import annotations

from sqlalchemy import func, select

from horde.accounts.models import KudosEntry, User
from horde.accounts.moves import TOTALS, Kind, deltas
from horde.storage.database import Database

#: The kudos totals and the kinds each sums (the record counts carry tokens the ledger does not hold).
KUDOS_TOTALS = {
    total: [kind for kind in Kind if deltas((0, 1, kind))[total]] for total in TOTALS if total.startswith("kudos_")
}


def unbalanced_users(db: Database) -> list[tuple[str, int, int]]:
    """(username, balance, sum of entries) of every user whose balance differs from its entries."""
    entries = (
        select(KudosEntry.user_id, func.sum(KudosEntry.amount).label("total")).group_by(KudosEntry.user_id).subquery()
    )
    total = func.coalesce(entries.c.total, 0)
    query = (
        select(User.username, User.kudos, total)
        .outerjoin(entries, entries.c.user_id == User.id)
        .where(User.kudos != total)
    )
    with db.read() as session:
        return [tuple(row) for row in session.execute(query)]


def untrue_totals(db: Database) -> list[tuple[str, str, int, int]]:
    """(username, total, its value, the sum of its kinds' entries) of every kudos total that differs from the
    ledger, and (username, generations, value, count of entries) of every generation count that does."""
    wrong = []
    with db.read() as session:
        for total, kinds in KUDOS_TOTALS.items():
            wrong += _differing(session, total, func.sum(KudosEntry.amount), kinds)
        wrong += _differing(session, "requested_generations", func.count(), [Kind.CHARGE])
        wrong += _differing(session, "fulfilled_generations", func.count(), [Kind.REWARD])
    return wrong


def _differing(session, column: str, aggregate, kinds: list[str]) -> list[tuple[str, str, int, int]]:
    entries = (
        select(KudosEntry.user_id, aggregate.label("total"))
        .where(KudosEntry.kind.in_(kinds))
        .group_by(KudosEntry.user_id)
        .subquery()
    )
    total = func.coalesce(entries.c.total, 0)
    value = getattr(User, column)
    query = select(User.username, value, total).outerjoin(entries, entries.c.user_id == User.id).where(value != total)
    return [(row[0], column, row[1], row[2]) for row in session.execute(query)]


def assert_balances_match_ledger(db: Database) -> None:
    unbalanced = unbalanced_users(db)
    assert not unbalanced, f"balances differ from their ledger entries (user, balance, entries): {unbalanced}"
    untrue = untrue_totals(db)
    assert not untrue, f"running totals differ from the ledger (user, total, value, entries): {untrue}"
