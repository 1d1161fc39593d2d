"""The kudos invariant as a standing check: every balance equals the sum of its user's ledger entries."""

from __future__ import annotations

from sqlalchemy import func, select

from horde.accounts.models import KudosEntry, User
from horde.database import Database


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


def assert_balances_match_ledger(db: Database) -> None:
    unbalanced = unbalanced_users(db)
    assert not unbalanced, f"balances differ from their ledger entries (user, balance, entries): {unbalanced}"
