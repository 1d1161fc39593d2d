"""Roles set by the operator, balances past 32 bits, and the counterpart a gift's entries name."""

from __future__ import annotations

from sqlalchemy import select, update

from horde.accounts import roles
from horde.accounts import service as accounts
from horde.accounts.auth import authenticate, forget_identities
from horde.accounts.models import KudosEntry, User
from horde.chat.models import ChatRequest
from horde.chat.tiers import MAX_PRIORITY
from tests.integration.accounts.test_kudos_transfer import alias, transfer
from tests.support.native import pop


def balance_of(runtime, user) -> int:
    """Read from the database: the AI Horde's answers carry kudos as JSON floats, exact only below 2^53."""
    with runtime.db.read() as session:
        return session.get_one(User, user.id).kudos


def test_a_role_change_reaches_a_cached_identity_once_forgotten(runtime, make_user):
    user, key = make_user()
    assert authenticate(runtime, key).role == "user"  # now cached
    with runtime.db.transaction() as session:
        roles.set_role(session, alias(user), "moderator")
    assert authenticate(runtime, key).role == "user"  # the cache still holds it...
    forget_identities(runtime)
    assert authenticate(runtime, key).role == "moderator"  # ... until every process is told to forget


def test_forgetting_reaches_another_runtime_through_the_bus_it_listens_to(runtime, make_user):
    _, key = make_user()
    authenticate(runtime, key)
    assert runtime.identities.get(accounts.identity_cache_key(key)) is not None
    runtime.bus.publish_now("identities")  # as another process's forget_identities arrives
    assert runtime.identities.get(accounts.identity_cache_key(key)) is None


def test_a_name_that_repeats_is_found_by_its_alias(runtime, make_user):
    user, _ = make_user()
    with runtime.db.transaction() as session:
        assert accounts.find_by_name(session, alias(user)).id == user.id
        assert accounts.find_by_name(session, user.username).id == user.id


def test_balances_past_32_bits_move_and_past_64_bits_are_refused(client, make_user, runtime):
    rich, rich_key = make_user()
    poor, poor_key = make_user()
    with runtime.db.transaction() as session:
        accounts.set_kudos(session, session.get_one(User, rich.id), 3 * 2**31)
        accounts.set_kudos(session, session.get_one(User, poor.id), 2**63 - 10)
    answer = transfer(client, rich_key, alias(poor), 2**31 - 1)
    assert (answer.status_code, answer.json["rc"]) == (400, "BadRequest")
    assert answer.json["param"] == "amount" and "past" in answer.json["message"]
    assert balance_of(runtime, rich) == 3 * 2**31 and balance_of(runtime, poor) == 2**63 - 10  # nothing moved
    answer = transfer(client, poor_key, alias(rich), 2**31 - 1)  # the other way: a balance past 2^32
    assert answer.status_code == 200, answer.json
    assert balance_of(runtime, rich) == 3 * 2**31 + 2**31 - 1


def test_a_gifts_entries_name_each_other(client, make_user, runtime):
    sender, sender_key = make_user(kudos=50)
    recipient, _ = make_user()
    assert transfer(client, sender_key, alias(recipient), 20).status_code == 200
    with runtime.db.read() as session:
        entries = session.execute(
            select(KudosEntry.user_id, KudosEntry.kind, KudosEntry.counterpart_id).where(
                KudosEntry.kind.in_(["gifted", "received"])
            )
        ).all()
    assert sorted(entries) == sorted([(sender.id, "gifted", recipient.id), (recipient.id, "received", sender.id)])


def test_a_move_past_64_bits_through_the_ledger_is_refused(runtime, make_user):
    user, _ = make_user()
    with runtime.db.transaction() as session:
        session.execute(update(User).where(User.id == user.id).values(kudos=2**63 - 5, kudos_admin=2**63 - 5))
        session.add(KudosEntry(user_id=user.id, amount=2**63 - 5, kind="grant"))
    try:
        with runtime.db.transaction() as session:
            accounts.move_kudos(session, session.get_one(User, user.id), 10, kind="grant")
    except Exception as error:
        assert type(error).__name__ == "BadRequest" and "past" in str(error)
    else:
        raise AssertionError("a balance past 2^63 - 1 was accepted")
    with runtime.db.read() as session:
        assert session.get_one(User, user.id).kudos == 2**63 - 5


def test_a_balance_past_32_bits_still_queues_with_the_highest_priority(client, make_user, runtime):
    """A request's priority is its caller's balance held within its 32-bit column (horde/chat/tiers.py)."""
    rich, key = make_user()
    with runtime.db.transaction() as session:
        accounts.set_kudos(session, session.get_one(User, rich.id), 3 * 2**31)
    pop(client, key, "rich-worker", models=["rich-model"])
    answer = client.post(
        "/api/v2/generate/chat/async",
        json={"model": "rich-model", "messages": [{"role": "user", "content": "Hi"}]},
        headers={"apikey": key},
    )
    assert answer.status_code == 202, answer.json
    with runtime.db.read() as session:
        assert session.get_one(ChatRequest, answer.json["id"]).priority == MAX_PRIORITY
