"""A /v1/completions JSON answer, like a chat one, is released (one holder less, delivered) when the server closes
the response after its last byte: the release's write is not on the client's path."""

from __future__ import annotations

import threading

from sqlalchemy import select

from horde.text.models import TextRequest
from tests.support.processes import wait_until
from tests.support.statements import statements
from tests.support.text_api import text_pop, text_submit

BODY = {"model": "m1", "prompt": "Once upon", "max_tokens": 16}
JOIN_S = 30
#: The queue position's sum of the generations served before the request (horde/text/queue.py).
POSITION = ("coalesce(sum(text_requests.waiting)", "text_requests.priority >")


def start_call(client, key: str) -> tuple[threading.Thread, list]:
    """POST /v1/completions in a thread of its own; its answer lands in the list."""
    answers: list = []

    def call_v1():
        answers.append(
            client.application.test_client().post(
                "/v1/completions", json=BODY, headers={"Authorization": f"Bearer {key}"}
            )
        )

    call = threading.Thread(target=call_v1)
    call.start()
    return call, answers


def holders_and_delivered(runtime, request_id: str) -> tuple[int, bool]:
    with runtime.db.read() as session:
        request = session.get(TextRequest, request_id)
        return request.holders, request.delivered


def test_a_completions_json_answer_is_released_once_the_server_closes_it(runtime, client, make_user):
    _, owner = make_user("owner")
    text_pop(client, owner)  # online, so the front admits the request
    _, key = make_user("client", kudos=100)

    call, answers = start_call(client, key)
    job = wait_until(lambda: text_pop(client, owner)["id"], timeout_s=JOIN_S, what="the request's job")
    assert text_submit(client, owner, job, generation=" a time").status_code == 200
    call.join(JOIN_S)
    answer = answers[0]
    assert answer.status_code == 200 and answer.json["choices"][0]["text"] == " a time"
    request_id = answer.headers["x-request-id"]

    assert holders_and_delivered(runtime, request_id) == (1, False), "not released before the response is closed"
    answer.close()
    assert holders_and_delivered(runtime, request_id) == (0, True)


def test_a_completions_json_call_reads_no_queue_position(runtime, client, make_user):
    """Only a keepalive carries the queue position and wait estimate: a JSON answer, which sends none while it
    waits its first seconds, never computes them."""
    _, owner = make_user("owner")
    text_pop(client, owner)
    _, key = make_user("client", kudos=100)

    with statements(runtime) as seen:
        call, answers = start_call(client, key)
        job = wait_until(lambda: text_pop(client, owner)["id"], timeout_s=JOIN_S, what="the request's job")
        assert text_submit(client, owner, job, generation=" a time").status_code == 200
        call.join(JOIN_S)
    assert answers[0].status_code == 200
    assert not [statement for statement in seen if all(part in statement for part in POSITION)], seen


def test_a_completions_admission_writes_its_request_in_one_statement_on_postgresql(runtime, client, make_user):
    """The request row carries the front's bookkeeping (body hash, holders) from its INSERT: no UPDATE follows.
    On PostgreSQL its model rows come in the same statement; SQLite writes them in an INSERT of their own."""
    _, owner = make_user("owner")
    text_pop(client, owner)
    _, key = make_user("client", kudos=100)

    with statements(runtime) as seen:
        call, answers = start_call(client, key)
        wait_until(lambda: queued(runtime), timeout_s=JOIN_S, what="the request's row")
    writes = [
        statement
        for statement in seen
        if statement.startswith(("insert", "update", "with")) and "text_req" in statement
    ]
    if runtime.db.is_postgresql:
        assert len(writes) == 1 and writes[0].startswith("with created as (insert into text_requests"), writes
        assert "model_rows as (insert into text_request_models" in writes[0]
    else:
        assert [" ".join(statement.split()[:3]) for statement in writes] == [
            "insert into text_requests",
            "insert into text_request_models",
        ], writes
    with runtime.db.read() as session:
        assert session.scalar(select(TextRequest.holders)) == 1
    job = wait_until(lambda: text_pop(client, owner)["id"], timeout_s=JOIN_S, what="the request's job")
    assert text_submit(client, owner, job).status_code == 200
    call.join(JOIN_S)
    assert answers[0].status_code == 200


def queued(runtime) -> bool:
    with runtime.db.read() as session:
        return session.scalar(select(TextRequest.id)) is not None
