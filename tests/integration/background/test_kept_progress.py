"""A background-streamed response keeps each progress post as the deltas it added (horde/background/progress_log.py)."""

import pytest
from sqlalchemy import select

from horde import errors
from horde.background.models import ProgressEntry
from horde.chat.models import CANCELLED, FAULTED, PROGRESS_KEPT_SHOWN, WAITING, ChatRequest
from tests.support.native import pop, queued_id

BACKGROUND_STREAM = {"model": "m1", "input": "Tell me", "background": True, "stream": True}


@pytest.fixture
def owner_key(client, make_user):
    return make_user("owner", kudos=0)[1]


@pytest.fixture
def key(make_user):
    return make_user("client", kudos=1_000)[1]


def create(client, key, body):
    """POST /v1/responses; the stream of a background one is left unread (it follows the request on its own)."""
    answer = client.post("/v1/responses", json=body, headers={"Authorization": f"Bearer {key}"}, buffered=False)
    assert answer.status_code == 200, answer.get_data()
    request_id = answer.headers["x-request-id"]
    answer.close()
    return request_id


def progress(client, owner_key, job_id, content, reasoning=""):
    answer = client.post(
        "/api/v2/generate/chat/progress",
        json={"id": job_id, "content": content, "reasoning_content": reasoning},
        headers={"apikey": owner_key},
    )
    assert answer.status_code == 200, answer.json
    return answer.json["cancel"]


def entries(runtime, request_id):
    with runtime.db.read() as session:
        rows = session.execute(
            select(ProgressEntry.seq, ProgressEntry.content, ProgressEntry.reasoning)
            .where(ProgressEntry.request_id == request_id)
            .order_by(ProgressEntry.seq)
        ).all()
    return [tuple(row) for row in rows]


def request_row(runtime, request_id) -> ChatRequest:
    with runtime.db.read() as session:
        return session.get_one(ChatRequest, request_id)


def test_each_post_keeps_what_it_added(client, runtime, owner_key, key):
    pop(client, owner_key)  # online
    request_id = create(client, key, BACKGROUND_STREAM)
    job = pop(client, owner_key)["id"]
    assert not progress(client, owner_key, job, "", "Thin")
    assert not progress(client, owner_key, job, "Hel", "Thinking")
    assert not progress(client, owner_key, job, "Hel", "Thinking")  # adds nothing: keeps nothing
    assert not progress(client, owner_key, job, "Hello wo", "Thinking")
    assert not progress(client, owner_key, job, "Hello world", "Thinking")
    assert entries(runtime, request_id) == [(1, "", "Thin"), (2, "Hel", "king"), (4, "lo wo", ""), (5, "rld", "")]
    assert request_row(runtime, request_id).progress_log == PROGRESS_KEPT_SHOWN


def test_a_request_that_is_not_background_streamed_keeps_nothing(client, runtime, owner_key, key):
    pop(client, owner_key)
    polled = create(client, key, dict(BACKGROUND_STREAM, stream=False))  # background, polled
    native = queued_id(client, key)
    for request_id in (polled, native):
        job = pop(client, owner_key)["id"]
        assert not progress(client, owner_key, job, "Some text")
        assert entries(runtime, request_id) == []


def test_a_rewritten_text_ends_the_request_charged_for_what_was_kept(client, runtime, owner_key, key):
    pop(client, owner_key)
    request_id = create(client, key, BACKGROUND_STREAM)
    job = pop(client, owner_key)["id"]
    assert not progress(client, owner_key, job, "The first eighty characters of an answer that a client may have read.")
    assert progress(client, owner_key, job, "Another answer altogether.")  # the worker is told to stop
    ended = request_row(runtime, request_id)
    assert ended.state == CANCELLED and ended.fault_rc == errors.ChatStreamDiverged.rc
    assert ended.kudos_charged > 0  # the kept text, as a diverged stream pays for what it streamed
    assert len(entries(runtime, request_id)) == 1


def test_a_fault_after_kept_text_fails_the_request_instead_of_starting_it_over(client, runtime, owner_key, key):
    pop(client, owner_key)
    request_id = create(client, key, BACKGROUND_STREAM)
    job = pop(client, owner_key)["id"]
    fault = client.post(
        "/api/v2/generate/chat/fault", json={"id": job, "reason": "out of memory"}, headers={"apikey": owner_key}
    )
    assert fault.status_code == 200, fault.json
    assert request_row(runtime, request_id).state == WAITING  # nothing was kept yet: started over
    job = pop(client, owner_key)["id"]
    assert not progress(client, owner_key, job, "Part of")
    fault = client.post(
        "/api/v2/generate/chat/fault", json={"id": job, "reason": "out of memory"}, headers={"apikey": owner_key}
    )
    assert fault.status_code == 200, fault.json
    ended = request_row(runtime, request_id)
    assert ended.state == FAULTED and ended.attempts < runtime.settings.max_attempts
