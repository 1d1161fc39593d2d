"""The /v1 client path's reads of its request (issue 12): a JSON answer hears only the end of its request, a
stream hears its job start and progress too. Counted (never timed)."""

from __future__ import annotations

import json
import threading

import pytest

from horde.chat.models import ChatRequest
from tests.support.native import pop, submit
from tests.support.processes import wait_until
from tests.support.statements import statements

BODY = {"model": "m1", "messages": [{"role": "user", "content": "Hello"}], "max_tokens": 16}
PROGRESS_POSTS = 3
JOIN_S = 30
#: The waiter's read of its request (request_rows.follow_request): the payload only once the request is final.
FOLLOW_READ = "then chat_requests.payload end as payload"
#: The release of a delivered answer (idempotency.release_delivered).
RELEASE = "update chat_requests set holders="


def follow_reads(seen: list[str]) -> int:
    return len([statement for statement in seen if FOLLOW_READ in statement])


def answer_with_progress(
    client, owner: str, key: str, body: dict, before_submit=lambda: None, headers: dict | None = None
) -> tuple[int, str]:
    """Send `body` to /v1 in a thread; take its job, post PROGRESS_POSTS progresses, call `before_submit`,
    submit; the answer's status and body, read whole in that thread."""
    answers: list = []

    def call_v1():
        answer = client.application.test_client().post(
            "/v1/chat/completions", json=body, headers={"Authorization": f"Bearer {key}"} | (headers or {})
        )
        answers.append((answer.status_code, answer.get_data(as_text=True)))
        answer.close()  # as a WSGI server does after the last byte: the delivered answer's release runs then

    call = threading.Thread(target=call_v1)
    call.start()
    job = wait_until(lambda: pop(client, owner)["id"], timeout_s=JOIN_S, what="the request's job")
    for index in range(PROGRESS_POSTS):
        progressed = client.post(
            "/api/v2/generate/chat/progress", json={"id": job, "content": "Hi" * (index + 1)}, headers={"apikey": owner}
        )
        assert progressed.json == {"cancel": False}
    before_submit()
    assert submit(client, owner, job).status_code == 200
    call.join(JOIN_S)
    return answers[0]


def test_a_json_answer_whose_submit_ran_here_never_reads_its_request(runtime, client, make_user):
    """The job's start and its progress do not wake a JSON answer, and the submit that finished its request in
    this process handed it the finish (decision 0018): the answer reads nothing, and is the very answer a
    read of the stored request gives (an Idempotency-Key's replay reads it)."""
    _, owner = make_user("owner")
    pop(client, owner)
    _, key = make_user("client", kudos=100)
    idempotency_key = {"Idempotency-Key": "handed-over-finish"}

    with statements(runtime) as seen:
        status, body = answer_with_progress(client, owner, key, BODY, headers=idempotency_key)

    assert status == 200 and json.loads(body)["choices"][0]["message"]["content"] == "Hi there"
    assert follow_reads(seen) == 0
    replay = client.post(
        "/v1/chat/completions", json=BODY, headers={"Authorization": f"Bearer {key}"} | idempotency_key
    )
    assert replay.headers.get("Idempotent-Replayed") == "true"
    assert replay.json == json.loads(body)


def test_a_stream_hears_its_job_start_and_progress(runtime, client, make_user):
    _, owner = make_user("owner")
    pop(client, owner)
    _, key = make_user("client", kudos=100)

    with statements(runtime) as seen:
        status, body = answer_with_progress(
            client,
            owner,
            key,
            dict(BODY, stream=True),
            before_submit=lambda: wait_until(lambda: follow_reads(seen) >= 1, timeout_s=JOIN_S, what="a read"),
        )

    assert status == 200 and body.rstrip().endswith("data: [DONE]")
    assert follow_reads(seen) >= 1  # the start or a progress; the end is handed over by the submit here


def test_a_json_answer_is_released_without_a_transaction_block(runtime, client, make_user):
    """On PostgreSQL the release (one holder less, delivered) is one statement in autocommit: no BEGIN, no
    COMMIT."""
    if not runtime.db.is_postgresql:
        pytest.skip("SQLite has no autocommit: its single statements are write transactions")
    _, owner = make_user("owner")
    pop(client, owner)
    _, key = make_user("client", kudos=100)

    with statements(runtime) as seen, statements(runtime, transactional_only=True) as in_transactions:
        status, _ = answer_with_progress(client, owner, key, BODY)

    assert status == 200
    released = [s for s in seen if s.startswith(RELEASE)]
    assert len(released) == 1 and not [s for s in in_transactions if s.startswith(RELEASE)]


def test_a_json_answer_is_released_once_the_server_closes_it(runtime, client, make_user):
    """The release of a delivered answer is not on the client's path: it runs when the server closes the response,
    after the answer's last byte."""
    _, owner = make_user("owner")
    pop(client, owner)
    _, key = make_user("client", kudos=100)
    answers: list = []

    def call_v1():
        answers.append(
            client.application.test_client().post(
                "/v1/chat/completions", json=BODY, headers={"Authorization": f"Bearer {key}"}
            )
        )

    call = threading.Thread(target=call_v1)
    call.start()
    job = wait_until(lambda: pop(client, owner)["id"], timeout_s=JOIN_S, what="the request's job")
    assert submit(client, owner, job).status_code == 200
    call.join(JOIN_S)
    answer = answers[0]
    assert answer.status_code == 200 and answer.json["choices"][0]["message"]["content"] == "Hi there"
    request_id = answer.headers["x-request-id"]

    assert holders_and_delivered(runtime, request_id) == (1, False), "not released before the response is closed"
    answer.close()
    assert holders_and_delivered(runtime, request_id) == (0, True)


def holders_and_delivered(runtime, request_id: str) -> tuple[int, bool]:
    with runtime.db.read() as session:
        request = session.get(ChatRequest, request_id)
        return request.holders, request.delivered
