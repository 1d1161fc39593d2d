"""The stats' windows count exactly the rows served in them, whatever the rollup has reached (decision 0026), and
read a few rows of the history, not all of it."""

from __future__ import annotations

import datetime as dt

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from horde.chat import stats as chat_stats
from horde.stats import rollup, windows
from horde.stats.models import ServedMark, ServedTotal
from horde.text import stats as text_stats
from horde.timeutil import utcnow
from tests.support import history, served
from tests.support.statements import statements_with_parameters

DAY_S = 86_400
WINDOWS_S = chat_stats.WINDOWS_S
#: Seconds before "now" at which rows are served: on both sides of every window's start, of a minute's edge and
#: of the rollup's lag, and far back (more than a rollup's span of days).
OFFSETS_S = [
    0.5, 30, 59.9, 60, 60.1, 61, 119, 120, 121, 150, 179.99, 180, 240.5, 3599.99, 3600, 3600.01, 7200,
    DAY_S - 0.5, DAY_S, DAY_S + 0.5, DAY_S + 3600, 30 * DAY_S - 0.5, 30 * DAY_S, 30 * DAY_S + 0.5, 33 * DAY_S,
]  # fmt: skip
#: Rows a windows read may take from the served rows' table: a minute of the history at a window's edge (one a
#: second), twice, and an index's neighbours.
EDGE_ROWS = 2 * 60 + 5


def _expected(moments: list[tuple[dt.datetime, int]], now: dt.datetime) -> dict[str, windows.Counts]:
    answer = {}
    for name, seconds in WINDOWS_S.items():
        inside = [tokens for at, tokens in moments if seconds is None or at >= now - dt.timedelta(seconds=seconds)]
        answer[name] = windows.Counts(len(inside), sum(inside))
    return answer


def _mark(runtime):
    with runtime.db.read() as session:
        return session.scalar(select(ServedMark.rolled_until).where(ServedMark.series == "chat"))


@pytest.mark.parametrize("seconds_past_the_minute", [0, 37.25])
def test_every_window_counts_its_rows_exactly_as_the_rollup_catches_up(runtime, make_user, seconds_past_the_minute):
    user, _ = make_user()
    now = utcnow().replace(second=0, microsecond=0) + dt.timedelta(seconds=seconds_past_the_minute)
    moments = [(now - dt.timedelta(seconds=offset), index + 1) for index, offset in enumerate(OFFSETS_S)]
    served.chat(runtime, user.id, moments)
    expected = _expected(moments, now)

    def counted() -> dict[str, windows.Counts]:
        with runtime.db.read() as session:
            return windows.served(session, chat_stats.SERVED, WINDOWS_S, now)

    assert counted() == expected, "before any rollup"
    rollups = 0
    while rollup.roll_up_when_due(runtime.db, chat_stats.SERVED, now) is not None:
        rollups += 1
        assert counted() == expected, f"after rollup {rollups}, mark {_mark(runtime)}"
    assert rollups >= 33, "a rollup covers at most a day: the history took a rollup per day"
    assert _mark(runtime) == rollup.floor_minute(now - dt.timedelta(seconds=rollup.ROLLUP_LAG_S))
    assert rollup.roll_up_when_due(runtime.db, chat_stats.SERVED, now) is None, "nothing new to roll"

    later = now + dt.timedelta(minutes=7, seconds=11)
    newer = [(now + dt.timedelta(seconds=offset), 1000 + offset) for offset in (1, 65, 300, 420)]
    served.chat(runtime, user.id, newer)
    assert rollup.roll_up_when_due(runtime.db, chat_stats.SERVED, later) is not None
    with runtime.db.read() as session:
        assert windows.served(session, chat_stats.SERVED, WINDOWS_S, later) == _expected(moments + newer, later)


def test_text_generations_per_model_and_in_total(runtime, make_user):
    owner, _ = make_user(trusted=True)
    worker_id = history.worker(runtime, owner.id)
    now = utcnow().replace(microsecond=0) - dt.timedelta(seconds=5)
    models = ["m-a", "m-b", "m-c"]
    generations = [
        (now - dt.timedelta(seconds=offset), models[index % len(models)], 10 * (index + 1))
        for index, offset in enumerate(OFFSETS_S)
    ]
    served.text(runtime, owner.id, worker_id, generations)
    periods = {"day": DAY_S, "month": 30 * DAY_S, "total": None}

    def expected_by_model() -> dict[str, dict[str, int]]:
        answer: dict[str, dict[str, int]] = {}
        for period, seconds in periods.items():
            counts: dict[str, int] = {}
            for at, model, _ in generations:
                if seconds is None or at >= now - dt.timedelta(seconds=seconds):
                    counts[model] = counts.get(model, 0) + 1
            answer[period] = counts
        return answer

    def read() -> tuple[dict, dict]:
        with runtime.db.read() as session:
            totals = windows.served(session, text_stats.SERVED, WINDOWS_S, now)
            return totals, windows.served_by_model(session, text_stats.SERVED, periods, now)

    expected_totals = {
        name: windows.Counts(len(inside), sum(tokens for _, _, tokens in inside))
        for name, seconds in WINDOWS_S.items()
        for inside in [[g for g in generations if seconds is None or g[0] >= now - dt.timedelta(seconds=seconds)]]
    }
    assert read() == (expected_totals, expected_by_model())
    while rollup.roll_up_when_due(runtime.db, text_stats.SERVED, now) is not None:
        assert read() == (expected_totals, expected_by_model())
    assert read() == (expected_totals, expected_by_model())


#: Per series: what writes its history, the rows it counts (the module's SERVED), their table and the index for it.
SERIES = {
    "chat": (history.past_chat, chat_stats.SERVED, "chat_requests", "ix_chat_requests_done_finished"),
    "text": (
        lambda runtime, owner_id, worker_id, count: history.past_text(runtime, owner_id, [worker_id], count),
        text_stats.SERVED,
        "text_jobs",
        "ix_text_jobs_submitted_ended",
    ),
}


@pytest.mark.parametrize("series", SERIES)
def test_the_totals_read_the_edges_of_the_windows_not_the_history(runtime, make_user, series):
    write_history, rows, table, index = SERIES[series]
    owner, _ = make_user(trusted=True)
    worker_id = history.worker(runtime, owner.id)
    write_history(runtime, owner.id, worker_id, 5_000)
    now = utcnow()
    while rollup.roll_up_when_due(runtime.db, rows, now) is not None:
        pass
    if runtime.db.is_postgresql:
        with runtime.db.engine.connect() as connection:
            connection.exec_driver_sql("BEGIN")
            try:
                before = history.rows_read(connection, table)  # a backend's counts not yet reported
                counts = windows.served(Session(bind=connection), rows, WINDOWS_S, now)
                assert history.rows_read(connection, table) - before <= EDGE_ROWS
            finally:
                connection.exec_driver_sql("ROLLBACK")
    else:
        with runtime.db.transaction() as session:  # a server's SQLite has no statistics: it never analyzes
            session.connection().exec_driver_sql("DROP TABLE IF EXISTS sqlite_stat1")
        with statements_with_parameters(runtime) as seen, runtime.db.read() as session:
            counts = windows.served(session, rows, WINDOWS_S, now)
        with runtime.db.read() as session:
            plans = [history.sqlite_plan(session.connection(), sql, parameters) for sql, parameters in seen]
        on_table = [plan for plan in plans if f" {table} " in plan]
        assert on_table and all(
            f"USING INDEX {index}" in plan or f"USING COVERING INDEX {index}" in plan for plan in on_table
        )
    assert counts["total"].requests == 5_000 and counts["minute"].requests == 0


def test_the_totals_endpoint_counts_a_request_served_now(client, make_user):
    from tests.support.native import pop, queued_id, submit

    _, owner = make_user(trusted=True)
    _, key = make_user(kudos=1000)
    before = client.get("/api/v2/stats/chat/totals").json
    assert before["minute"] == before["total"] == {"requests": 0, "tokens": 0}
    pop(client, owner)  # the worker checks in: its model is served
    queued_id(client, key)
    job = pop(client, owner)
    assert submit(client, owner, job["id"], usage={"completion_tokens": 7}).status_code == 200
    after = client.get("/api/v2/stats/chat/totals").json
    assert all(after[name] == {"requests": 1, "tokens": 7} for name in WINDOWS_S)


def test_each_domains_sweep_rolls_its_series_up(runtime, make_user):
    from horde.chat import service as chat_service
    from horde.text import service as text_service

    owner, _ = make_user(trusted=True)
    worker_id = history.worker(runtime, owner.id)
    long_ago = utcnow() - dt.timedelta(minutes=10)
    served.chat(runtime, owner.id, [(long_ago, 3)])
    served.text(runtime, owner.id, worker_id, [(long_ago, "m-a", 4)])
    chat_service.sweep(runtime)
    text_service.sweep(runtime)
    with runtime.db.read() as session:
        marks = dict(session.execute(select(ServedMark.series, ServedMark.rolled_until)).all())
        totals = session.execute(select(ServedTotal.series, ServedTotal.model, ServedTotal.requests)).all()
    assert set(marks) == {"chat", "text"} and all(mark > long_ago for mark in marks.values())
    # Per model too: chat by the model that served it (these rows name none: chat_stats.UNKNOWN_MODEL).
    assert sorted(tuple(row) for row in totals) == [
        ("chat", "", 1),
        ("chat", "unknown", 1),
        ("text", "", 1),
        ("text", "m-a", 1),
    ]
