"""Transactions cost round trips: on PostgreSQL a read or a statement atomic on its own runs without
BEGIN and COMMIT (autocommit), and a transaction of several statements still runs in one."""

from __future__ import annotations

import pytest
from psycopg.pq import TransactionStatus
from sqlalchemy import select, text

from horde.accounts import service as accounts
from horde.accounts.models import User


def _status(session) -> TransactionStatus:
    """What the driver says of the connection now: IDLE outside a transaction block, INTRANS inside one."""
    return session.connection().connection.dbapi_connection.info.transaction_status


@pytest.fixture
def postgresql_runtime(runtime):
    if not runtime.db.is_postgresql:
        pytest.skip("SQLite has no autocommit engine: a read is a deferred transaction, a write an immediate one")
    return runtime


def test_a_read_opens_no_transaction_block(postgresql_runtime):
    with postgresql_runtime.db.read() as session:
        assert session.execute(text("SELECT 41 + 1")).scalar() == 42
        assert _status(session) == TransactionStatus.IDLE  # no BEGIN was sent, so no ROLLBACK follows


def test_an_autocommit_write_is_stored_as_it_runs(postgresql_runtime):
    db = postgresql_runtime.db
    with db.transaction() as session:
        user, _ = accounts.create_user(session, "soon-trusted")
    with db.autocommit() as session:
        session.execute(User.__table__.update().where(User.id == user.id).values(trusted=True))
        assert _status(session) == TransactionStatus.IDLE
        with db.read() as other:  # another connection sees it before the block ends: it committed as it ran
            assert other.scalar(select(User.trusted).where(User.id == user.id)) is True


def test_a_transaction_still_holds_its_statements_together(postgresql_runtime):
    with postgresql_runtime.db.transaction() as session:
        session.execute(text("SELECT 1"))
        assert _status(session) == TransactionStatus.INTRANS
