"""GET /api/v2/stats/series and the queue's sampler: generations and tokens per minute from the stats rollup's
minutes (null past its mark), the queue and the workers online from the samples (null where none), and one
sample per minute and model however many processes sample it."""

from __future__ import annotations

import datetime as dt
import multiprocessing

import pytest
from sqlalchemy import func, select

from horde.chat import stats as chat_stats
from horde.console import sampler
from horde.stats import rollup
from horde.stats.models import ALL_MODELS, QueueSample
from horde.text import stats as text_stats
from horde.timeutil import utcnow
from tests.integration.console import sampler_racer
from tests.support import history, served
from tests.support.native import pop, queued_id
from tests.support.text_api import text_pop, text_queued

JOIN_S = 120


def _series(client, **query) -> dict:
    answer = client.get("/api/v2/stats/series", query_string=query)
    assert answer.status_code == 200, answer.json
    return answer.json


def test_the_sampler_counts_the_queue_and_the_workers_online_once_a_minute(client, make_user, runtime):
    _, owner = make_user()
    _, key = make_user(kudos=1000)
    pop(client, owner, "sampled-chat", models=["chat-a", "shared-b"])
    text_pop(client, owner, "sampled-text", models=["shared-b"])
    for _ in range(2):
        queued_id(client, key, model="chat-a")
    text_queued(client, key, models=["shared-b"], params={"n": 3, "max_length": 16})
    now = utcnow()
    first = sampler.Sampler()
    assert first.sample_when_due(runtime, now) is True
    assert first.sample_when_due(runtime, now) is False  # this process sampled the minute
    assert sampler.Sampler().sample_when_due(runtime, now) is False  # another process finds it sampled
    with runtime.db.read() as session:
        rows = {row.model: (row.queued, row.workers) for row in session.execute(select(QueueSample)).scalars()}
    assert rows == {ALL_MODELS: (5, 2), "chat-a": (2, 1), "shared-b": (3, 2)}

    answer = _series(client, minutes=10)
    assert answer["series"]["queued"][-1] == 5 and answer["series"]["workers"][-1] == 2
    assert answer["series"]["queued"][:-1] == [None] * 9  # no sample: unknown
    assert answer["models"] == ["shared-b", "chat-a"]
    one = _series(client, minutes=10, model="chat-a")
    assert (one["series"]["queued"][-1], one["series"]["workers"][-1]) == (2, 1)


def test_samples_older_than_two_days_are_dropped(runtime):
    old = rollup.floor_minute(utcnow()) - sampler.SAMPLES_KEPT - dt.timedelta(minutes=5)
    with runtime.db.transaction() as session:
        sampler.write(session, [{"minute": old, "model": ALL_MODELS, "queued": 1, "workers": 1}])
    assert sampler.Sampler().sample_when_due(runtime) is True
    with runtime.db.read() as session:
        assert session.scalar(select(func.count()).where(QueueSample.minute == old)) == 0


def test_served_generations_per_minute_from_the_rollup(client, make_user, runtime):
    user, _ = make_user()
    worker_owner, _ = make_user()
    worker_id = history.worker(runtime, worker_owner.id)
    now = utcnow()
    last = rollup.floor_minute(now)
    # 30 and 20 minutes ago: chat requests; 20 minutes ago: text generations of two models.
    served.chat(runtime, user.id, [(last - dt.timedelta(minutes=30, seconds=-5), 4)])
    served.chat(runtime, user.id, [(last - dt.timedelta(minutes=20, seconds=-5), 6)] * 2)
    served.text(
        runtime,
        user.id,
        worker_id,
        [
            (last - dt.timedelta(minutes=20, seconds=-9), "m-x", 10),
            (last - dt.timedelta(minutes=20, seconds=-9), "m-y", 1),
        ],
    )
    for rows in (chat_stats.SERVED, text_stats.SERVED):
        rollup.roll_up_when_due(runtime.db, rows, now)
    answer = _series(client, minutes=60)
    assert answer["step_s"] == 60 and len(answer["series"]["requests"]) == 60
    assert answer["start"] == (last - dt.timedelta(minutes=59)).isoformat() + "Z"
    requests, tokens = answer["series"]["requests"], answer["series"]["tokens"]
    assert (requests[59 - 30], tokens[59 - 30]) == (1, 4)
    assert (requests[59 - 20], tokens[59 - 20]) == (4, 12 + 11)
    assert sum(value for value in requests if value) == 5
    lag_minutes = rollup.ROLLUP_LAG_S // 60
    assert requests[-lag_minutes:] == [None] * lag_minutes  # past the rollup's mark: unknown yet
    assert requests[0] == 0
    by_model = _series(client, minutes=60, model="m-x")["series"]
    assert (by_model["requests"][59 - 20], by_model["tokens"][59 - 20]) == (1, 10)
    assert by_model["requests"][59 - 30] == 0


@pytest.mark.parametrize(
    ("query", "param"),
    [
        ({"minutes": "9"}, "minutes"),
        ({"minutes": "1441"}, "minutes"),
        ({"minutes": "many"}, "minutes"),
        ({"model": "m" * 201}, "model"),
        ({"model": "bad\x00name"}, "model"),
    ],
)
def test_values_out_of_bounds_are_refused(client, query, param):
    answer = client.get("/api/v2/stats/series", query_string=query)
    assert (answer.status_code, answer.json["rc"], answer.json["param"]) == (400, "BadRequest", param)


def test_two_processes_sampling_the_same_minute_write_it_once(postgresql_runtime, make_user, client):
    runtime = postgresql_runtime
    _, owner = make_user()
    pop(client, owner, "raced-chat", models=["raced-model"])
    minute = rollup.floor_minute(utcnow())
    context = multiprocessing.get_context("spawn")
    barrier, results = context.Barrier(2), context.Queue()
    racers = [
        context.Process(target=sampler_racer.race, args=(runtime.settings.database_url, barrier, minute, results))
        for _ in range(2)
    ]
    for racer in racers:
        racer.start()
    answers = sorted(results.get(timeout=JOIN_S) for _ in racers)
    for racer in racers:
        racer.join(JOIN_S)
    assert answers == [False, True], answers
    with runtime.db.read() as session:
        rows = session.execute(select(QueueSample.model, func.count()).group_by(QueueSample.model)).all()
    assert sorted(rows) == [(ALL_MODELS, 1), ("raced-model", 1)]


def test_a_minute_sampled_by_another_process_takes_none_of_this_ones_rows(runtime):
    minute = rollup.floor_minute(utcnow())
    first = [{"minute": minute, "model": name, "queued": 1, "workers": 1} for name in (ALL_MODELS, "m-a")]
    second = [{"minute": minute, "model": name, "queued": 2, "workers": 2} for name in (ALL_MODELS, "m-a", "m-b")]
    with runtime.db.transaction() as session:
        assert sampler.write(session, first) is True
    with runtime.db.transaction() as session:
        assert sampler.write(session, second) is False
    with runtime.db.read() as session:
        rows = session.execute(select(QueueSample.model, QueueSample.queued).order_by(QueueSample.model)).all()
    assert [tuple(row) for row in rows] == [(ALL_MODELS, 1), ("m-a", 1)]
