"""The model rows of ended requests are dropped, so a pop's first look does not grow with history: a submit
drops those of the request it finishes at once, the sweeper those of every other ended request."""

from __future__ import annotations

from sqlalchemy import func, select

from horde.chat import claim, model_rows, service
from horde.chat.models import ChatRequestModel
from tests.support.native import pop, queued_id, submit


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
