"""GET /api/v2/users/{id}/ledger and /balance_history: the whole history walked a page at a time with the exact
balance after each entry, cursors that only this server makes for this user, and the closing balance per day."""

from __future__ import annotations

import datetime as dt
import itertools
import random

import pytest
from sqlalchemy import update

from horde.accounts import service as accounts
from horde.accounts.models import KudosEntry, User
from horde.accounts.moves import Kind
from horde.timeutil import utcnow


def _moves(runtime, user_id: int, amounts: list[int]) -> None:
    with runtime.db.transaction() as session:
        user = session.get(User, user_id)
        for amount in amounts:
            accounts.move_kudos(session, user, amount, kind=Kind.GRANT if amount > 0 else Kind.CHARGE)


def _walk(client, user_id: int, key: str, limit: int) -> list[dict]:
    entries, cursor = [], None
    while True:
        query = {"limit": limit} | ({"cursor": cursor} if cursor else {})
        answer = client.get(f"/api/v2/users/{user_id}/ledger", query_string=query, headers={"apikey": key})
        assert answer.status_code == 200, answer.json
        assert len(answer.json["entries"]) <= limit
        entries += answer.json["entries"]
        cursor = answer.json["next_cursor"]
        if cursor is None:
            return entries


def test_the_whole_history_walks_with_the_exact_balance_after_each_entry(client, make_user, runtime):
    user, key = make_user(kudos=1000)
    other, _ = make_user(kudos=0)
    rng = random.Random(46)
    _moves(runtime, user.id, [rng.choice([-1, 1]) * rng.randint(1, 40) for _ in range(60)])
    with runtime.db.transaction() as session:
        accounts.gift(session, user.id, other.id, 25)
    _moves(runtime, user.id, [rng.randint(1, 9) for _ in range(12)])

    entries = _walk(client, user.id, key, limit=7)

    with runtime.db.read() as session:
        balance = session.get(User, user.id).kudos
        count = session.query(KudosEntry).filter(KudosEntry.user_id == user.id).count()
    assert len(entries) == count == 1 + 60 + 1 + 12
    assert len({entry["id"] for entry in entries}) == count
    assert entries[0]["balance_after"] == balance
    for newer, older in itertools.pairwise(entries):
        assert older["balance_after"] == newer["balance_after"] - newer["amount"]
        assert older["created_at"] <= newer["created_at"]
    assert entries[-1]["balance_after"] - entries[-1]["amount"] == 0  # before its first entry: nothing
    gifted = next(entry for entry in entries if entry["kind"] == "gifted")
    assert gifted["amount"] == -25
    assert gifted["counterpart"] == {"id": other.id, "username": f"{other.username}#{other.id}"}
    first = entries[-1]
    assert first["kind"] == "grant" and first["counterpart"] is None and first["request_id"] is None
    assert first["created_at"].endswith("Z") and dt.datetime.fromisoformat(first["created_at"][:-1])


def test_a_page_of_the_default_size_and_its_balance(client, make_user, runtime):
    user, key = make_user(kudos=5)
    _moves(runtime, user.id, [1] * 60)
    answer = client.get(f"/api/v2/users/{user.id}/ledger", headers={"apikey": key}).json
    assert len(answer["entries"]) == 50 and answer["next_cursor"]
    assert answer["balance"] == answer["entries"][0]["balance_after"] == 65


def test_a_user_without_entries_has_an_empty_page(client, make_user):
    user, key = make_user(kudos=0)
    answer = client.get(f"/api/v2/users/{user.id}/ledger", headers={"apikey": key}).json
    assert answer == {"entries": [], "next_cursor": None, "balance": 0}


def test_a_forged_or_foreign_cursor_is_refused(client, make_user, runtime):
    user, key = make_user(kudos=5)
    other, other_key = make_user(kudos=5)
    _moves(runtime, user.id, [1, 2, 3])
    _moves(runtime, other.id, [1, 2, 3])
    cursor = client.get(f"/api/v2/users/{user.id}/ledger", query_string={"limit": 1}, headers={"apikey": key}).json[
        "next_cursor"
    ]
    body, mac = cursor.split(".")
    forged = [
        "nonsense",
        cursor + "x",
        body + "." + mac[::-1],
        body[:-2] + "AA." + mac,  # another balance, the same signature
        "é" * 10,
        "a" * 300,
    ]
    for bad in forged:
        answer = client.get(f"/api/v2/users/{user.id}/ledger", query_string={"cursor": bad}, headers={"apikey": key})
        assert (answer.status_code, answer.json["rc"], answer.json["param"]) == (400, "BadRequest", "cursor"), bad
    foreign = client.get(
        f"/api/v2/users/{other.id}/ledger", query_string={"cursor": cursor}, headers={"apikey": other_key}
    )
    assert (foreign.status_code, foreign.json["param"]) == (400, "cursor")


@pytest.mark.parametrize("limit", ["0", "201", "-1", "ten", "1.5", "9" * 30])
def test_a_limit_out_of_bounds_is_refused(client, make_user, limit):
    user, key = make_user()
    answer = client.get(f"/api/v2/users/{user.id}/ledger", query_string={"limit": limit}, headers={"apikey": key})
    assert (answer.status_code, answer.json["rc"], answer.json["param"]) == (400, "BadRequest", "limit")


def test_an_unknown_user_is_not_found(client, make_user):
    _user, key = make_user()
    for path in ("999999/ledger", "nobody/ledger", "999999/balance_history", "999999/workers", "999999/usage"):
        answer = client.get(f"/api/v2/users/{path}", headers={"apikey": key})
        assert (answer.status_code, answer.json["rc"]) == (404, "UserNotFound"), path


def test_the_balance_history_closes_each_day(client, make_user, runtime):
    user, key = make_user(kudos=100)
    today = utcnow().date()
    _moves(runtime, user.id, [10, -30, 7, 50])
    # Date the entries back: 10 and -30 two days ago, 7 yesterday, 50 today (the grant of 100 a week ago).
    with runtime.db.transaction() as session:
        entries = session.query(KudosEntry).filter(KudosEntry.user_id == user.id).order_by(KudosEntry.id).all()
        ages = [7, 2, 2, 1, 0]
        for entry, age in zip(entries, ages, strict=True):
            moment = dt.datetime.combine(today - dt.timedelta(days=age), dt.time(12))
            session.execute(update(KudosEntry).where(KudosEntry.id == entry.id).values(created_at=moment))
    answer = client.get(f"/api/v2/users/{user.id}/balance_history", query_string={"days": 4}, headers={"apikey": key})
    assert answer.status_code == 200
    days = [(day["day"], day["balance"]) for day in answer.json["days"]]
    assert days == [
        ((today - dt.timedelta(days=3)).isoformat(), 100),
        ((today - dt.timedelta(days=2)).isoformat(), 80),
        ((today - dt.timedelta(days=1)).isoformat(), 87),
        (today.isoformat(), 137),
    ]
    default = client.get(f"/api/v2/users/{user.id}/balance_history", headers={"apikey": key}).json["days"]
    assert len(default) == 30 and default[-1]["balance"] == 137 and default[0]["balance"] == 0  # before the grant


@pytest.mark.parametrize("days", ["0", "91", "x"])
def test_a_window_out_of_bounds_is_refused(client, make_user, days):
    user, key = make_user()
    answer = client.get(
        f"/api/v2/users/{user.id}/balance_history", query_string={"days": days}, headers={"apikey": key}
    )
    assert (answer.status_code, answer.json["param"]) == (400, "days")
