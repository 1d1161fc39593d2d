"""Conversation affinity through the native API (horde/chat/affinity.py): a conversation's next turn goes to the
worker that served its last turn while that worker may take it, waits for it at most HORDE_AFFINITY_WAIT_MS,
then goes to any eligible worker; never across users, never to a worker that is not eligible."""

from __future__ import annotations

import threading
import time

import pytest

from horde.chat import request_rows
from tests.support.native import pop, queued_id, submit

WAIT_MS = 1500
LONG_WAIT_MS = 60_000
TURN = {"messages": [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Hello"}]}


@pytest.fixture
def affine(runtime):
    runtime.settings = runtime.settings.replace(affinity_wait_ms=LONG_WAIT_MS)
    return runtime


def _serve(client, key, worker: str, **declared) -> str:
    """`worker` pops one job and submits it; the job's request id."""
    job = pop(client, key, name=worker, **declared)
    assert job["id"] is not None, job
    assert submit(client, key, job["id"]).status_code == 200
    return job


def _request(runtime, request_id: str):
    with runtime.db.read() as session:
        return request_rows.read_request(session, request_id)


def _first_turn_served_by(client, runtime, owner, user, worker="w1", **body):
    """Both workers online; the conversation's first turn served by `worker`."""
    pop(client, owner, name="w1")
    pop(client, owner, name="w2")
    first = queued_id(client, user, **(TURN | body))
    job = _serve(client, owner, worker)
    assert _request(runtime, first).worker_name == worker
    return first, job


def test_the_next_turn_goes_to_the_worker_of_the_last_even_when_another_pops_first(affine, client, make_user):
    _, owner = make_user("owner")
    _, user = make_user("client")
    _first_turn_served_by(client, affine, owner, user, "w1", conversation_key="chat-1")
    second = queued_id(client, user, **TURN, conversation_key="chat-1")
    reserved = _request(affine, second)
    assert reserved.reserved_worker_id is not None
    assert pop(client, owner, name="w2")["id"] is None  # reserved for w1, which may still take it
    job = pop(client, owner, name="w1")
    assert job["id"] is not None and _request(affine, second).worker_name == "w1"
    assert job["payload"]["conversation_key"] == reserved.conversation_key  # the worker keeps it on one slot


def test_a_keyless_conversation_is_known_by_its_leading_messages(affine, client, make_user):
    _, owner = make_user("owner")
    _, user = make_user("client")
    first, _ = _first_turn_served_by(client, affine, owner, user, "w2")
    history = TURN["messages"] + [{"role": "assistant", "content": "Hi"}, {"role": "user", "content": "More"}]
    second = queued_id(client, user, messages=history)
    assert _request(affine, second).conversation_key == _request(affine, first).conversation_key
    assert pop(client, owner, name="w1")["id"] is None
    assert pop(client, owner, name="w2")["id"] is not None


def test_the_turn_goes_to_any_worker_once_the_wait_is_over(runtime, client, make_user):
    runtime.settings = runtime.settings.replace(affinity_wait_ms=WAIT_MS)
    _, owner = make_user("owner")
    _, user = make_user("client")
    _first_turn_served_by(client, runtime, owner, user, "w1", conversation_key="chat-2")
    pop(client, owner, name="w1", threads=1)  # w1 busy with another job: the turn waits for it
    second = queued_id(client, user, **TURN, conversation_key="chat-2")
    reserved_until = _request(runtime, second).reserved_until
    assert pop(client, owner, name="w2")["id"] is None
    waited = {}

    def long_poll():  # w2 long-polls: the end of the reservation wakes it, not its own recheck
        started = time.monotonic()
        waited["job"] = pop(client, owner, name="w2", wait=10)
        waited["s"] = time.monotonic() - started

    poller = threading.Thread(target=long_poll)
    poller.start()
    poller.join(timeout=15)
    assert waited["job"]["id"] is not None, waited
    assert waited["s"] < WAIT_MS / 1000 + 2  # well before the long-poll's recheck of 5 s and its wait of 10 s
    taken = _request(runtime, second)
    assert taken.worker_name == "w2"
    with runtime.db.read() as session:
        from horde.chat.models import ChatJob

        started_at = session.get(ChatJob, taken.current_job_id).started_at
    assert started_at >= reserved_until  # not before the reservation ended
    third = queued_id(client, user, **TURN, conversation_key="chat-2")  # w2 is the conversation's worker now
    assert _request(runtime, third).reserved_worker_id == taken.worker_id


def test_one_users_conversation_never_steers_anothers(affine, client, make_user):
    _, owner = make_user("owner")
    _, user = make_user("client")
    _, other = make_user("other")
    first, _ = _first_turn_served_by(client, affine, owner, user, "w1", conversation_key="shared")
    theirs = queued_id(client, other, **TURN, conversation_key="shared")
    assert _request(affine, theirs).conversation_key != _request(affine, first).conversation_key
    assert _request(affine, theirs).reserved_worker_id is None
    assert pop(client, owner, name="w2")["id"] is not None  # any worker, at once


def test_no_reservation_for_a_worker_that_is_not_eligible(affine, client, make_user):
    _, owner = make_user("owner")
    _, user = make_user("client")
    _first_turn_served_by(client, affine, owner, user, "w1", conversation_key="chat-3")
    pop(client, owner, name="w1", max_length=64)  # w1 now declares a length too short for the next turn
    second = queued_id(client, user, **TURN, conversation_key="chat-3", max_tokens=512)
    assert _request(affine, second).reserved_worker_id is None
    assert pop(client, owner, name="w2")["id"] is not None


def test_affinity_off_reserves_nothing(runtime, client, make_user):
    runtime.settings = runtime.settings.replace(affinity_wait_ms=0)
    _, owner = make_user("owner")
    _, user = make_user("client")
    _first_turn_served_by(client, runtime, owner, user, "w1", conversation_key="chat-4")
    second = queued_id(client, user, **TURN, conversation_key="chat-4")
    assert _request(runtime, second).reserved_worker_id is None
    assert pop(client, owner, name="w2")["id"] is not None


def test_the_reserved_worker_takes_its_turn_before_older_requests(affine, client, make_user):
    _, owner = make_user("owner")
    _, user = make_user("client")
    _first_turn_served_by(client, affine, owner, user, "w1", conversation_key="chat-5")
    older = queued_id(client, user, messages=[{"role": "user", "content": "An unrelated question"}])
    second = queued_id(client, user, **TURN, conversation_key="chat-5")
    assert pop(client, owner, name="w1")["id"] is not None
    assert _request(affine, second).worker_name == "w1"
    assert pop(client, owner, name="w2")["id"] is not None  # the older request went to the next worker
    assert _request(affine, older).worker_name == "w2"


def test_a_conversation_key_is_bounded(affine, client, make_user):
    _, user = make_user("client")
    pop(client, user, name="w1")
    response = client.post(
        "/api/v2/generate/chat/async",
        json={"model": "m1", **TURN, "conversation_key": "k" * 1025},
        headers={"apikey": user},
    )
    assert response.status_code == 400
    assert "conversation_key" in response.json["message"] or "conversation_key" in str(response.json)
