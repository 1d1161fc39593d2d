"""Database's blocks: Core statements run on the block's own connection with no ORM Session behind them; ORM
work in the same block shares that connection and transaction, commits with it and rolls back with it."""

from __future__ import annotations

import pytest
from sqlalchemy import event, select, update
from sqlalchemy.orm import Session

from horde.accounts import service as accounts
from horde.accounts.models import User


@pytest.fixture
def orm_transactions():
    """Every ORM Session transaction begun while the test runs."""
    begun = []

    def note(session, transaction, connection):
        begun.append(session)

    event.listen(Session, "after_begin", note)
    yield begun
    event.remove(Session, "after_begin", note)


def _trusted(runtime, username: str) -> bool | None:
    with runtime.db.read() as session:
        return session.connection().scalar(select(User.trusted).where(User.username == username))


def test_core_blocks_build_no_orm_session(runtime, orm_transactions):
    with runtime.db.transaction() as session:
        accounts.create_user(session, "core-first-alice", kudos=5)
    orm_transactions.clear()
    for block in (runtime.db.transaction, runtime.db.read, runtime.db.autocommit):
        with block() as session:
            assert session.connection().scalar(select(User.kudos).where(User.username == "core-first-alice")) == 5
    assert orm_transactions == []


def test_orm_and_core_work_of_one_block_commit_together_on_one_connection(runtime, orm_transactions):
    with runtime.db.transaction() as session:
        user, _ = accounts.create_user(session, "core-first-bob")  # ORM: added, flushed by the commit
        connection = session.connection()
        assert session.execute(select(User.id).where(User.username == "core-first-bob")).scalar() == user.id
        connection.execute(update(User).where(User.username == "core-first-bob").values(trusted=True))
        assert session.connection() is connection
    assert orm_transactions  # the ORM work had its Session
    assert _trusted(runtime, "core-first-bob") is True
    assert user.username == "core-first-bob"  # loaded attributes stay readable after the block


def test_a_block_that_raises_rolls_back_its_orm_and_core_work(runtime):
    with pytest.raises(RuntimeError), runtime.db.transaction() as session:
        accounts.create_user(session, "core-first-carol")
        session.flush()
        session.connection().execute(update(User).where(User.username == "core-first-carol").values(trusted=True))
        raise RuntimeError("the block fails")
    assert _trusted(runtime, "core-first-carol") is None  # no such user: the insert rolled back too


def test_a_block_that_runs_no_statement_takes_no_connection(runtime):
    pool = runtime.db.engine.pool
    before = pool.checkedout()
    with runtime.db.transaction() as session:
        assert pool.checkedout() == before
        session.connection()
        assert pool.checkedout() == before + 1
    assert pool.checkedout() == before
