"""The model rows of ended requests are dropped, so a pop's first look does not grow with history: a submit
drops those of the request it finishes at once, the sweeper those of every other ended request."""

from __future__ import annotations

import threading

import pytest
from sqlalchemy import func, select, update

from horde.chat import claim, model_rows, service
from horde.chat.models import DONE, PROCESSING, WAITING, ChatRequest, ChatRequestModel
from tests.support.native import pop, queued_id, submit

#: How long the submit may take while a pop holds its request's model row: it must not wait for that row at all.
SUBMIT_ALONE_S = 10


def _model_rows(runtime, request_id: str) -> int:
    with runtime.db.read() as session:
        return session.scalar(select(func.count()).where(ChatRequestModel.request_id == request_id)) or 0


def _cancel(client, key, request_id):
    response = client.delete(f"/api/v2/generate/chat/status/{request_id}", headers={"apikey": key})
    assert response.status_code == 200, response.json


def test_a_submit_drops_the_model_rows_of_the_request_it_finishes_and_no_others(runtime, client, make_user):
    _, owner = make_user("owner")
    pop(client, owner, models=["m1", "m2"])
    both = {"models": ["m1", "m2"], "messages": [{"role": "user", "content": "Hello"}]}
    finished = client.post("/api/v2/generate/chat/async", json=both, headers={"apikey": owner}).json["id"]
    job = pop(client, owner, models=["m1", "m2"])["id"]
    running = queued_id(client, owner, model="m1")
    assert pop(client, owner, name="w2", models=["m1"])["id"] is not None
    waiting = queued_id(client, owner, model="m2")
    assert [_model_rows(runtime, request) for request in (finished, running, waiting)] == [2, 1, 1]

    submit(client, owner, job)

    assert [_model_rows(runtime, request) for request in (finished, running, waiting)] == [0, 1, 1]


def test_a_sweep_drops_the_model_rows_of_ended_requests_only(runtime, client, make_user):
    _, owner = make_user("owner")
    pop(client, owner, models=["m1", "m2"])
    both = {"models": ["m1", "m2"], "messages": [{"role": "user", "content": "Hello"}]}
    done = client.post("/api/v2/generate/chat/async", json=both, headers={"apikey": owner}).json["id"]
    submit(client, owner, pop(client, owner, models=["m1", "m2"])["id"])
    cancelled = queued_id(client, owner, model="m1")
    _cancel(client, owner, cancelled)
    processing = queued_id(client, owner, model="m2")
    assert pop(client, owner, models=["m1", "m2"])["id"] is not None
    waiting = queued_id(client, owner, model="m1")
    assert [_model_rows(runtime, request) for request in (done, cancelled, processing, waiting)] == [0, 1, 1, 1]

    service.sweep(runtime)

    assert [_model_rows(runtime, request) for request in (done, cancelled, processing, waiting)] == [0, 0, 1, 1]
    with runtime.db.read() as session:
        assert claim.any_waiting_for(session, ["m1"]) and not claim.any_waiting_for(session, ["m2"])
    assert pop(client, owner, name="w2", models=["m1"])["id"] is not None  # the waiting one is still found


def test_one_sweep_drops_a_bounded_batch(runtime, client, make_user):
    _, owner = make_user("owner")
    pop(client, owner)
    ended = [queued_id(client, owner) for _ in range(3)]
    for request in ended:
        _cancel(client, owner, request)

    with runtime.db.autocommit() as session:
        assert model_rows.forget_ended(session, batch=2) == 2
    assert sorted(_model_rows(runtime, request) for request in ended) == [0, 0, 1]
    with runtime.db.autocommit() as session:
        assert model_rows.forget_ended(session, batch=2) == 1
    assert [_model_rows(runtime, request) for request in ended] == [0, 0, 0]


def test_a_submit_leaves_a_model_row_a_pop_holds_and_that_pop_finds_the_request_ended(
    runtime, client, make_user, database_url
):
    """A pop that saw the request waiting locks its model row, then takes the request; a fast worker's submit of
    that request (its claim committed meanwhile) holds the request and dropped the model row: each waited for the
    other, and PostgreSQL killed one (a 500 under load). The submit now leaves the held row to the sweeper."""
    if not database_url.startswith("postgresql"):
        pytest.skip("row locks are PostgreSQL's: SQLite's writer lock serializes the two")
    _, owner = make_user("owner")
    pop(client, owner)
    request_id = queued_id(client, owner)
    job = pop(client, owner)["id"]
    held = runtime.db.engine.connect()
    transaction = held.begin()
    held.execute(select(ChatRequestModel.model).where(ChatRequestModel.request_id == request_id).with_for_update())
    answers = []
    submitting = threading.Thread(target=lambda: answers.append(submit(client.application.test_client(), owner, job)))
    try:
        submitting.start()
        submitting.join(SUBMIT_ALONE_S)
        assert not submitting.is_alive(), "the submit waited for the model row the pop holds"
        seen_waiting = update(ChatRequest).where(ChatRequest.id == request_id, ChatRequest.state == WAITING)
        taken = held.execute(seen_waiting.values(state=PROCESSING))  # the pop's next step: take what it saw waiting
        assert taken.rowcount == 0
    finally:
        transaction.rollback()
        held.close()
        submitting.join()
    assert answers[0].status_code == 200, answers[0].json
    with runtime.db.read() as session:
        assert session.get(ChatRequest, request_id).state == DONE
    assert _model_rows(runtime, request_id) == 1
    service.sweep(runtime)
    assert _model_rows(runtime, request_id) == 0
