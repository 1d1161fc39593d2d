"""GET /api/v2/users/{id}/usage: generations served to the user's requests (chat and text) and their tokens per
day, counted by the stats rollup into user_usage_days, and the kudos charged and earned per day from the ledger;
exactly once when two processes roll the two series up at once on the same users and days."""

from __future__ import annotations

import datetime as dt
import multiprocessing

import pytest
from sqlalchemy import select

from horde.accounts.models import User
from horde.chat import stats as chat_stats
from horde.stats import rollup
from horde.stats.models import UserUsageDay
from horde.text import stats as text_stats
from horde.timeutil import utcnow
from tests.integration.console import usage_racer
from tests.support import history, served
from tests.support.native import pop, queued_id, submit
from tests.support.text_api import text_pop, text_queued, text_submit

#: Past the rollup's lag: a rollup at this moment counts everything served until now.
ROLLED = dt.timedelta(seconds=rollup.ROLLUP_LAG_S + 60)
JOIN_S = 120


def _usage(client, user_id: int, key: str, days: int = 1) -> list[dict]:
    answer = client.get(f"/api/v2/users/{user_id}/usage", query_string={"days": days}, headers={"apikey": key})
    assert answer.status_code == 200, answer.json
    return answer.json["days"]


def _roll_up(runtime, now: dt.datetime) -> None:
    for rows in (chat_stats.SERVED, text_stats.SERVED):
        rollup.roll_up_when_due(runtime.db, rows, now)


def test_chat_and_text_generations_count_once_the_rollup_passes_them(client, make_user, runtime):
    requester, key = make_user(kudos=1000)
    owner, owner_key = make_user()
    pop(client, owner_key, "usage-chat-worker", models=["m1"])
    text_pop(client, owner_key, "usage-text-worker", models=["m1"])
    for _ in range(2):
        queued_id(client, key, model="m1")
        job = pop(client, owner_key, "usage-chat-worker", models=["m1"])
        assert submit(client, owner_key, job["id"], content="Hello there, friend").status_code == 200
    text_queued(client, key, params={"n": 3, "max_length": 64}, models=["m1"])
    for _ in range(3):
        job = text_pop(client, owner_key, "usage-text-worker", models=["m1"], amount=1)
        assert text_submit(client, owner_key, job["id"], "Once upon a time").status_code == 200

    (before,) = _usage(client, requester.id, key)
    assert (before["requests"], before["tokens"]) == (0, 0)  # served, not rolled up yet
    assert before["kudos_spent"] > 0  # the ledger counts at once

    _roll_up(runtime, utcnow() + ROLLED)

    with runtime.db.read() as session:
        user = session.get(User, requester.id)
        worker_owner = session.get(User, owner.id)
        generations, tokens, balance = user.requested_generations, user.requested_tokens, user.kudos
        earned = worker_owner.kudos
    (today,) = _usage(client, requester.id, key)
    assert today["day"] == utcnow().date().isoformat()
    assert (today["requests"], today["tokens"]) == (generations, tokens) == (5, tokens)
    assert tokens > 0
    assert today["kudos_spent"] == 1000 - balance and today["kudos_earned"] == 0
    (owners,) = _usage(client, owner.id, owner_key)
    assert (owners["requests"], owners["kudos_spent"], owners["kudos_earned"]) == (0, 0, earned)
    _roll_up(runtime, utcnow() + 2 * ROLLED)  # nothing new: nothing added
    assert _usage(client, requester.id, key)[0] == today


def test_each_day_of_the_window_oldest_first(client, make_user, runtime):
    requester, key = make_user()
    worker_owner, _ = make_user()
    worker_id = history.worker(runtime, worker_owner.id)
    today = utcnow().date()
    noon = dt.datetime.combine(today, dt.time(12))
    served.chat(runtime, requester.id, [(noon - dt.timedelta(days=2), 7), (noon - dt.timedelta(days=2), 3)])
    served.text(runtime, requester.id, worker_id, [(noon - dt.timedelta(days=1), "m1", 11)])
    _roll_up(runtime, max(utcnow(), noon) + ROLLED)
    days = _usage(client, requester.id, key, days=4)
    assert [(day["day"], day["requests"], day["tokens"]) for day in days] == [
        ((today - dt.timedelta(days=3)).isoformat(), 0, 0),
        ((today - dt.timedelta(days=2)).isoformat(), 2, 10),
        ((today - dt.timedelta(days=1)).isoformat(), 1, 11),
        (today.isoformat(), 0, 0),
    ]


@pytest.fixture
def postgresql_only(postgresql_runtime):
    return postgresql_runtime


def test_two_processes_rolling_both_series_up_at_once_count_each_generation_once(postgresql_only, make_user):
    """Two serving processes' sweepers, each rolling the chat and the text series minute after minute, in
    opposite orders, over the same users and days: every generation lands once in its user's day."""
    runtime = postgresql_only
    users = [make_user()[0] for _ in range(3)]
    worker_owner, _ = make_user()
    worker_id = history.worker(runtime, worker_owner.id)
    rounds = 12
    first_minute = rollup.floor_minute(utcnow()) - dt.timedelta(minutes=rounds + 10)
    expected: dict[tuple[int, dt.date], list[int]] = {}
    chat_rows: dict[int, list] = {}
    text_rows: dict[int, list] = {}
    for minute in range(rounds + 1):
        for n, user in enumerate(users):
            at = first_minute + dt.timedelta(minutes=minute, seconds=5 + 11 * n)
            chat_rows.setdefault(user.id, []).append((at, minute + n))
            text_rows.setdefault(user.id, []).append((at, "m1", 2 * minute + n))
            if at < first_minute + dt.timedelta(minutes=rounds):
                counted = expected.setdefault((user.id, at.date()), [0, 0])
                counted[0] += 2
                counted[1] += 3 * minute + 2 * n
    for user in users:
        served.chat(runtime, user.id, chat_rows[user.id])
        served.text(runtime, user.id, worker_id, text_rows[user.id])
    lag = dt.timedelta(seconds=rollup.ROLLUP_LAG_S)
    moments = [first_minute + lag + dt.timedelta(minutes=r + 1, seconds=7) for r in range(rounds)]

    context = multiprocessing.get_context("spawn")
    barrier, results = context.Barrier(2), context.Queue()
    racers = [
        context.Process(
            target=usage_racer.race, args=(runtime.settings.database_url, barrier, moments, reverse, results)
        )
        for reverse in (False, True)
    ]
    for racer in racers:
        racer.start()
    errors = [results.get(timeout=JOIN_S) for _ in racers]
    for racer in racers:
        racer.join(JOIN_S)
    assert errors == [None, None] and all(racer.exitcode == 0 for racer in racers)

    with runtime.db.read() as session:
        found = {
            (row.user_id, row.day): [row.requests, row.tokens]
            for row in session.execute(select(UserUsageDay)).scalars()
        }
    assert found == expected
