"""POST /api/v2/kudos/transfer: kudos from user to user on the ledger, with the AI Horde's refusals."""

from __future__ import annotations

import datetime as dt

import pytest
from sqlalchemy import select, update

from horde.accounts.models import KudosEntry, SharedKey


def transfer(client, key: str | None, username: str, amount=10):
    body = {"username": username} if amount is None else {"username": username, "amount": amount}
    return client.post("/api/v2/kudos/transfer", json=body, headers={"apikey": key} if key else {})


def balance(client, key: str) -> float:
    return client.get("/api/v2/find_user", headers={"apikey": key}).json["kudos"]


def alias(user) -> str:
    return f"{user.username}#{user.id}"


def test_a_transfer_moves_kudos_with_an_entry_each_side(client, make_user, runtime):
    sender, sender_key = make_user(kudos=100)
    recipient, recipient_key = make_user()
    answer = transfer(client, sender_key, alias(recipient), 30.0)  # horde-sdk sends a float
    assert (answer.status_code, answer.json) == (200, {"transferred": 30.0})
    assert balance(client, sender_key) == 70 and balance(client, recipient_key) == 30
    with runtime.db.read() as session:
        entries = session.execute(
            select(KudosEntry.user_id, KudosEntry.amount, KudosEntry.kind).where(
                KudosEntry.kind.in_(["gifted", "received"])
            )
        ).all()
    assert sorted(entries) == sorted([(sender.id, -30, "gifted"), (recipient.id, 30, "received")])
    sent = client.get("/api/v2/find_user", headers={"apikey": sender_key}).json["kudos_details"]
    got = client.get("/api/v2/find_user", headers={"apikey": recipient_key}).json["kudos_details"]
    assert (sent["gifted"], sent["admin"], got["received"]) == (-30.0, 100.0, 30.0)


def test_the_name_part_is_not_compared_and_the_amount_defaults_to_100(client, make_user):
    _, sender_key = make_user(kudos=150)
    recipient, recipient_key = make_user()
    assert transfer(client, sender_key, f"someone-else#{recipient.id}", None).json == {"transferred": 100.0}
    assert transfer(client, sender_key, str(recipient.id), 1).status_code == 200  # the AI Horde reads the number
    assert balance(client, recipient_key) == 101


def test_the_whole_balance_may_go_and_no_more(client, make_user):
    _, sender_key = make_user(kudos=10)
    recipient, recipient_key = make_user()
    refused = transfer(client, sender_key, alias(recipient), 11)
    assert (refused.status_code, refused.json["rc"]) == (400, "KudosTransferNotEnough")
    assert balance(client, sender_key) == 10 and balance(client, recipient_key) == 0
    assert transfer(client, sender_key, alias(recipient), 10).status_code == 200
    assert balance(client, sender_key) == 0
    refused = transfer(client, sender_key, alias(recipient), 1)
    assert refused.json["rc"] == "KudosTransferNotEnough"


def test_a_recipient_with_the_lower_id_is_credited_first_and_rolled_back_on_refusal(client, make_user):
    """The rows are updated in id order: a refused sender with the higher id leaves the recipient as it was."""
    recipient, recipient_key = make_user()
    _, sender_key = make_user(kudos=5)
    assert transfer(client, sender_key, alias(recipient), 6).json["rc"] == "KudosTransferNotEnough"
    assert balance(client, recipient_key) == 0 and balance(client, sender_key) == 5


@pytest.mark.parametrize(
    ("amount", "status", "rc"),
    [
        (-5, 400, "NegativeKudosTransfer"),
        (0, 400, "InvalidKudosTransferAmount"),
        (2.5, 400, "BadRequest"),
        ("ten", 400, "BadRequest"),
        (True, 400, "BadRequest"),
        (2**31, 400, "BadRequest"),
    ],
)
def test_amounts_refused(client, make_user, amount, status, rc):
    _, sender_key = make_user(kudos=100)
    recipient, _ = make_user()
    answer = transfer(client, sender_key, alias(recipient), amount)
    assert (answer.status_code, answer.json["rc"]) == (status, rc)
    assert balance(client, sender_key) == 100


def test_refusals_of_who_sends_and_who_receives(client, make_user):
    sender, sender_key = make_user(kudos=100)
    recipient, _ = make_user()
    cases = [
        (transfer(client, None, alias(recipient)), 400, "KudosTransferFromAnon"),
        (transfer(client, "0000000000", alias(recipient)), 400, "KudosTransferFromAnon"),
        (transfer(client, "not-a-key", alias(recipient)), 401, "InvalidAPIKey"),
        (transfer(client, sender_key, "Anonymous#0"), 400, "KudosTransferToAnon"),
        (transfer(client, sender_key, alias(sender)), 400, "KudosTransferToSelf"),
        (transfer(client, sender_key, "nobody#99999"), 400, "InvalidTargetUsername"),
        (transfer(client, sender_key, "nobody"), 400, "InvalidTargetUsername"),
        (transfer(client, sender_key, "00000000-0000-0000-0000-000000000000"), 400, "InvalidTargetUsername"),
    ]
    assert [(answer.status_code, answer.json["rc"]) for answer, *_ in cases] == [case[1:] for case in cases]
    missing = client.post("/api/v2/kudos/transfer", json={"amount": 5}, headers={"apikey": sender_key})
    assert (missing.status_code, missing.json["param"]) == (400, "username")
    assert balance(client, sender_key) == 100


def test_a_transfer_to_a_shared_key_reaches_its_owner_and_raises_its_limit(client, make_user, runtime):
    _, sender_key = make_user(kudos=100)
    _, owner_key = make_user()
    limited = client.post("/api/v2/sharedkeys", json={"kudos": 10}, headers={"apikey": owner_key}).json["id"]
    unlimited = client.post("/api/v2/sharedkeys", json={"kudos": -1}, headers={"apikey": owner_key}).json["id"]
    assert transfer(client, sender_key, limited, 15).json == {"transferred": 15.0}
    assert transfer(client, sender_key, unlimited, 5).status_code == 200
    assert balance(client, owner_key) == 20
    assert client.get(f"/api/v2/sharedkeys/{limited}").json["kudos"] == 25
    assert client.get(f"/api/v2/sharedkeys/{unlimited}").json["kudos"] == -1
    assert transfer(client, owner_key, limited, 1).json["rc"] == "KudosTransferToSelf"
    with runtime.db.transaction() as session:
        session.execute(update(SharedKey).values(expires_at=dt.datetime(2000, 1, 1)))
    expired = transfer(client, sender_key, limited, 1)
    assert (expired.status_code, expired.json["rc"]) == (400, "SharedKeyExpired")
    assert balance(client, owner_key) == 20


def test_a_shared_key_cannot_send_kudos(client, make_user):
    _, owner_key = make_user(kudos=100)
    recipient, _ = make_user()
    key = client.post("/api/v2/sharedkeys", json={}, headers={"apikey": owner_key}).json["id"]
    answer = transfer(client, key, alias(recipient))
    assert (answer.status_code, answer.json["rc"]) == (401, "InvalidAPIKey")
    assert balance(client, owner_key) == 100
