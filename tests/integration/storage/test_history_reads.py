"""Reads that run every second or on every pop cost the same on a Horde that keeps its history as on a fresh one
(decision 0025): the wait estimate and a text worker's speed walk an index to the latest jobs, the sweeper finds
ended requests' model rows from the model rows, and the walking pool's statements, planned once for any values,
carry their states as literals, so that their plan is the one for the few waiting requests, not for "a good share
of the table"."""

from __future__ import annotations

import contextlib

import pytest
from sqlalchemy.orm import Session

from horde.chat import model_rows, queue
from horde.chat.models import DONE, WAITING
from horde.text import checkin
from tests.support import history
from tests.support.statements import statements_with_parameters

#: Enough finished jobs that reading them all is plainly not reading the latest few.
PAST_JOBS = 5_000
#: Workers whose generations came after the worker's own: a Horde has many, as its statistics say.
OTHER_WORKERS = 50
#: Rows a read may take besides the ones it is for (an index's neighbour, a visibility check).
SLACK_ROWS = 5


@contextlib.contextmanager
def _transaction(engine):
    """A connection in a transaction of its own, rolled back after the block: PostgreSQL counts what it read."""
    with engine.connect() as connection:
        connection.exec_driver_sql("BEGIN")  # also on the walking pool, whose sessions are in autocommit
        try:
            yield connection
        finally:
            connection.exec_driver_sql("ROLLBACK")


def _owner_and_worker(runtime, make_user):
    owner, _ = make_user("past-owner", trusted=True)
    return owner.id, history.worker(runtime, owner.id)


def _plan_of_the_only_statement(runtime, seen) -> str:
    (sql, parameters), *others = [(sql, parameters) for sql, parameters in seen if not sql.startswith("BEGIN")]
    assert not others
    with runtime.db.read() as session:
        return history.sqlite_plan(session.connection(), sql, parameters)


def test_the_wait_estimate_reads_the_latest_jobs_not_the_history(runtime, make_user):
    owner_id, worker_id = _owner_and_worker(runtime, make_user)
    history.past_chat(runtime, owner_id, worker_id, PAST_JOBS)
    if runtime.db.is_postgresql:
        with _transaction(runtime.db.engine) as connection:
            assert queue.typical_job_s(Session(bind=connection), 99.0) == 1.0
            assert history.rows_read(connection, "chat_jobs") <= queue.RECENT_JOBS_FOR_ESTIMATE + SLACK_ROWS
    else:
        with statements_with_parameters(runtime) as seen, runtime.db.read() as session:
            assert queue.typical_job_s(session, 99.0) == 1.0
        plan = _plan_of_the_only_statement(runtime, seen)
        assert "ix_chat_jobs_state_ended" in plan and "TEMP B-TREE" not in plan


def test_a_text_workers_speed_reads_its_latest_generations_not_its_history(runtime, make_user):
    """Neither the worker's own history nor the other workers' later generations are read: the worker is one of
    many, with as many generations as each of them, and all of its own are older than theirs."""
    owner_id, worker_id = _owner_and_worker(runtime, make_user)
    history.past_text(runtime, owner_id, [worker_id], PAST_JOBS // OTHER_WORKERS)
    others = [history.worker(runtime, owner_id) for _ in range(OTHER_WORKERS)]
    history.past_text(runtime, owner_id, others, PAST_JOBS, age_s=3_600)
    if runtime.db.is_postgresql:
        with _transaction(runtime.db.engine) as connection:
            assert checkin.tokens_per_s(Session(bind=connection), worker_id) == 32.0
            assert history.rows_read(connection, "text_jobs") <= checkin.RECENT_JOBS_FOR_SPEED + SLACK_ROWS
    else:
        with statements_with_parameters(runtime) as seen, runtime.db.read() as session:
            assert checkin.tokens_per_s(session, worker_id) == 32.0
        plan = _plan_of_the_only_statement(runtime, seen)
        assert "ix_text_jobs_worker_state_ended" in plan and "TEMP B-TREE" not in plan


def test_the_sweeper_finds_ended_requests_model_rows_from_the_model_rows(runtime, make_user):
    """The model rows are few (the live requests' and those the last sweep has not dropped); each request is
    looked up by its key, rather than every ended request of the history probed for model rows."""
    owner_id, worker_id = _owner_and_worker(runtime, make_user)
    history.past_chat(runtime, owner_id, worker_id, PAST_JOBS)
    live = history.live_chat(runtime, owner_id, [WAITING, WAITING, DONE])
    if runtime.db.is_postgresql:
        with _transaction(runtime.db.autocommit_engine) as connection:
            assert model_rows.forget_ended(Session(bind=connection)) == 1
            assert history.rows_read(connection, "chat_requests") <= len(live) + SLACK_ROWS
    else:
        with statements_with_parameters(runtime) as seen, runtime.db.autocommit() as session:
            assert model_rows.forget_ended(session) == 1
        plan = _plan_of_the_only_statement(runtime, seen)
        assert "SCAN listed" in plan and "ix_chat_requests_queue" not in plan


@pytest.fixture
def walking_runtime(runtime):
    if not runtime.db.is_postgresql:
        pytest.skip("the walking pool is PostgreSQL's (SQLite plans every statement as it prepares it)")
    return runtime


def test_the_walking_pools_count_of_the_queue_reads_the_queue_not_the_history(walking_runtime, make_user):
    """The empty pop's count of every waiting request, on the walking pool (one plan for any values): its plan
    must be the one for `state = 'waiting'`, run after run."""
    runtime = walking_runtime
    owner_id, worker_id = _owner_and_worker(runtime, make_user)
    history.past_chat(runtime, owner_id, worker_id, PAST_JOBS)
    history.live_chat(runtime, owner_id, [WAITING, WAITING])
    with _transaction(runtime.db.walking_engine) as connection:
        for _ in range(7):  # past psycopg's fifth run, from which the statement is prepared on the server
            assert queue.waiting(Session(bind=connection)) == 2
        assert history.rows_read(connection, "chat_requests") <= 7 * (2 + SLACK_ROWS)


def test_admissions_roster_is_the_online_workers_and_a_retired_workers_model_stays_known(runtime, client, make_user):
    from horde.chat import request_rows
    from horde.workers.service import remember_models
    from tests.support.native import pop
    from tests.support.native import queue as queue_request

    owner, owner_key = make_user("past-owner", trusted=True)
    for _ in range(OTHER_WORKERS):
        history.worker(runtime, owner.id)
    with runtime.db.transaction() as session:
        remember_models(session, ["past-model"])  # as each retired worker's first pop did
    pop(client, owner_key)  # the one online worker, of m1
    with runtime.db.read() as session:
        workers, trust = request_rows.roster(session, runtime.settings.worker_online_window_s)
    assert [worker.models for worker in workers] == [["m1"]] and trust == {owner.id: True}

    _, key = make_user(kudos=100)
    refused = queue_request(client, key, model="past-model")
    assert (refused.status_code, refused.json["rc"]) == (503, "no_eligible_worker"), "known, served by no one online"
    assert queue_request(client, key, model="never-declared").json["rc"] == "model_not_found"
    assert queue_request(client, key, model="m1").status_code == 202


def test_the_text_roster_is_the_online_workers_and_a_retired_workers_model_stays_known(runtime, client, make_user):
    from horde.text import known_models, roster
    from tests.support.text_api import text_pop

    owner, owner_key = make_user("past-owner", trusted=True)
    for _ in range(OTHER_WORKERS):
        history.worker(runtime, owner.id)  # each declared past-text-model on its last text pop, a day ago
    with runtime.db.transaction() as session:
        known_models.remember(session, ["past-text-model"])  # as each retired worker's first text pop did
    text_pop(client, owner_key)  # the one online text worker, of m1
    with runtime.db.read() as session:
        workers = roster.read(session, runtime.settings.worker_online_window_s)
    assert [(worker.name, worker.text_models, worker.owner_trusted) for worker in workers] == [("tw1", ["m1"], True)]

    _, key = make_user(kudos=100)

    def completion(model: str):
        body = {"model": model, "prompt": "Once", "max_tokens": 16}
        return client.post("/v1/completions", json=body, headers={"Authorization": f"Bearer {key}"})

    refused = completion("past-text-model")
    assert (refused.status_code, refused.json["error"]["code"]) == (503, "no_eligible_worker"), refused.json
    never = completion("never-declared")
    assert (never.status_code, never.json["error"]["code"]) == (404, "model_not_found"), never.json
