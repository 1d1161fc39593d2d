"""Every charge and reward is a ledger entry; balances always add up."""

from sqlalchemy import func, select, update

from horde.accounts import service as accounts
from horde.accounts.models import KudosEntry, User
from horde.chat import service
from tests.support.ledger import unbalanced_users
from tests.support.native import pop, queued_id, submit


def test_balances_add_up_after_a_mixed_run(client, make_user, runtime):
    _, owner = make_user("owner")
    requester, requester_key = make_user("requester", kudos=1000)
    pop(client, owner)
    done = queued_id(client, requester_key)
    job = pop(client, owner)
    reward = submit(client, owner, job["id"], content="x" * 400, usage={"completion_tokens": 100}).json["reward"]
    assert reward >= 1
    faulted = queued_id(client, requester_key)
    job = pop(client, owner)
    client.post("/api/v2/generate/chat/fault", json={"id": job["id"], "reason": "x"}, headers={"apikey": owner})
    streamed = queued_id(client, requester_key)
    pop(client, owner)
    pop(client, owner)
    with runtime.db.transaction() as session:
        request_user = session.get(User, requester.id)
        session.expunge(request_user)
    service.cancel(runtime, request_user, streamed, streamed_chars=800)
    anonymous = queued_id(client, "0000000000")

    with runtime.db.transaction() as session:
        for user in session.scalars(select(User)):
            assert user.kudos == accounts.ledger_sum(session, user), user.username
        assert session.scalar(select(func.sum(KudosEntry.amount)).where(KudosEntry.kind.in_(["charge", "reward"]))) == 0
        requester_row = session.get(User, requester.id)
        charges = session.scalars(
            select(KudosEntry).where(KudosEntry.user_id == requester.id, KudosEntry.kind == "charge")
        ).all()
        assert {entry.request_id for entry in charges} == {done, streamed}
        assert requester_row.kudos == 1000 + sum(entry.amount for entry in charges)
    assert faulted and anonymous


def test_users_kudos_sets_a_balance_through_an_adjustment(runtime, make_user):
    user, _ = make_user("someone", kudos=50)
    with runtime.db.transaction() as session:
        row = session.get(User, user.id)
        accounts.set_kudos(session, row, 20)
    with runtime.db.transaction() as session:
        row = session.get(User, user.id)
        assert row.kudos == 20 == accounts.ledger_sum(session, row)


def test_a_move_adds_in_sql_whatever_the_object_in_memory_holds(runtime, make_user):
    """Two sessions that both read a balance of 100 and both move kudos leave 100 + both amounts."""
    user, _ = make_user("someone", kudos=100)
    with runtime.db.transaction() as session:
        stale = session.get_one(User, user.id)
        session.expunge(stale)
    with runtime.db.transaction() as session:
        accounts.move_kudos(session, session.get_one(User, user.id), 50, kind="grant")
    with runtime.db.transaction() as session:
        accounts.move_kudos(session, stale, -10, kind="adjustment")
        assert stale.kudos == 140
    with runtime.db.read() as session:
        row = session.get_one(User, user.id)
        assert row.kudos == 140 == accounts.ledger_sum(session, row)


def test_the_standing_check_finds_a_balance_that_differs_from_its_entries(runtime, make_user):
    user, _ = make_user("drifted", kudos=30)
    assert unbalanced_users(runtime.db) == []
    with runtime.db.transaction() as session:
        session.execute(update(User).where(User.id == user.id).values(kudos=31))
    assert unbalanced_users(runtime.db) == [("drifted", 31, 30)]
    with runtime.db.transaction() as session:  # restored, so this test's own teardown check passes
        session.execute(update(User).where(User.id == user.id).values(kudos=30))
