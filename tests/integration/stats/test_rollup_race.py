"""Every serving process's sweeper rolls the series up: two processes at once, many rounds, on PostgreSQL (SQLite's
one writer would hide the race). In each round one moves the mark and the other finds it moved; no minute is
written twice, and the totals equal the rows served before the mark."""

from __future__ import annotations

import datetime as dt
import multiprocessing

import pytest
from sqlalchemy import func, select

from horde.chat import stats as chat_stats
from horde.stats import rollup
from horde.stats.models import ALL_MODELS, ServedMark, ServedMinute, ServedTotal
from horde.timeutil import utcnow
from tests.support import rollup_racer, served

ROUNDS = 25
RACERS = 2
#: Rows served per minute of the raced span, a few seconds apart.
PER_MINUTE = 4
JOIN_S = 120


@pytest.fixture
def runtime(postgresql_runtime):
    return postgresql_runtime


def test_two_processes_rolling_up_at_once_count_every_minute_once(runtime, make_user):
    user, _ = make_user()
    first_minute = rollup.floor_minute(utcnow()) - dt.timedelta(minutes=ROUNDS + 10)
    rows = [
        (first_minute + dt.timedelta(minutes=minute, seconds=13 * n + 1), minute + n)
        for minute in range(ROUNDS + 1)
        for n in range(PER_MINUTE)
    ]
    served.chat(runtime, user.id, rows)
    lag = dt.timedelta(seconds=rollup.ROLLUP_LAG_S)
    # Round r rolls up to the end of minute r: the first round starts the series, each next one adds a minute.
    moments = [first_minute + lag + dt.timedelta(minutes=r + 1, seconds=7) for r in range(ROUNDS)]

    context = multiprocessing.get_context("spawn")
    barrier, results = context.Barrier(RACERS), context.Queue()
    racers = [
        context.Process(target=rollup_racer.race, args=(runtime.settings.database_url, barrier, moments, results))
        for _ in range(RACERS)
    ]
    for racer in racers:
        racer.start()
    answers = [results.get(timeout=JOIN_S) for _ in range(RACERS * ROUNDS)]
    for racer in racers:
        racer.join(JOIN_S)
    assert all(racer.exitcode == 0 for racer in racers)

    by_round: dict[int, list] = {}
    for round_, answer in answers:
        by_round.setdefault(round_, []).append(answer)
    for round_, moved in sorted(by_round.items()):
        assert not [answer for answer in moved if isinstance(answer, str)], f"round {round_}: {moved}"
        winners = [answer for answer in moved if answer is not None]
        assert len(winners) == 1, f"round {round_}: one process moves the mark, the other finds it moved: {moved}"
        assert winners[0] == rollup.floor_minute(moments[round_] - lag)

    mark = moments[-1] - lag
    with runtime.db.read() as session:
        assert session.scalar(select(ServedMark.rolled_until)) == rollup.floor_minute(mark)
        minutes = session.execute(
            select(ServedMinute.minute, ServedMinute.requests)
            .where(ServedMinute.model == ALL_MODELS)
            .order_by(ServedMinute.minute)
        ).all()
        total = session.execute(
            select(ServedTotal.requests, ServedTotal.tokens).where(ServedTotal.model == ALL_MODELS)
        ).one()
        # Every model together, and the model each request was served by (these rows name none).
        assert session.scalars(select(ServedTotal.model).order_by(ServedTotal.model)).all() == [
            ALL_MODELS,
            chat_stats.UNKNOWN_MODEL,
        ]
        per_model = session.scalar(select(func.count()).where(ServedMinute.model == chat_stats.UNKNOWN_MODEL))
    before_mark = [(at, tokens) for at, tokens in rows if at < rollup.floor_minute(mark)]
    assert len(minutes) == per_model == ROUNDS, "a minute row per minute served, each written once"
    assert [requests for _, requests in minutes] == [PER_MINUTE * (index + 1) for index in range(ROUNDS)]
    assert tuple(total) == (len(before_mark), sum(tokens for _, tokens in before_mark))


def test_a_rollup_leaves_the_series_to_the_process_rolling_it_without_waiting(runtime, make_user):
    """A sweeper whose rollup finds another process's rollup holding the mark moves on (its expiries and wake-ups
    are not held up behind the other's transaction)."""
    import threading

    from sqlalchemy import text

    user, _ = make_user()
    now = utcnow()
    served.chat(runtime, user.id, [(now - dt.timedelta(minutes=30), 5)])
    assert rollup.roll_up_when_due(runtime.db, chat_stats.SERVED, now - dt.timedelta(minutes=20)) is not None
    answers: list = []
    with runtime.db.engine.connect() as other_process:
        other_process.execute(text("SELECT 1 FROM served_marks WHERE series = 'chat' FOR UPDATE"))
        sweep = threading.Thread(
            target=lambda: answers.append(rollup.roll_up_when_due(runtime.db, chat_stats.SERVED, now))
        )
        sweep.start()
        sweep.join(JOIN_S)
        assert not sweep.is_alive() and answers == [None], "the mark is another's: this sweep rolls nothing"
        other_process.rollback()
    assert rollup.roll_up_when_due(runtime.db, chat_stats.SERVED, now) == rollup.floor_minute(
        now - dt.timedelta(seconds=rollup.ROLLUP_LAG_S)
    )
