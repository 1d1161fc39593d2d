"""A pop does only the work that can change something: no write for an unchanged check-in, no expiry
sweep (the sweeper's job), no user lookup for a key it authenticated seconds ago, no second load of a body
it loaded before, and no second look at the queue for an announcement whose job was taken meanwhile."""

import datetime as dt
import threading
import uuid
from unittest import mock

from sqlalchemy import update

from horde.accounts import auth
from horde.accounts.identity import IdentityCache
from horde.chat import service
from horde.chat.models import ChatJob
from horde.dispatch.pop import POP_BODIES
from horde.events.bus import jobs_channel
from horde.text.pop import POP_BODIES as TEXT_POP_BODIES
from horde.timeutil import utcnow
from horde.workers.models import Worker
from tests.support.native import pop, queued_id
from tests.support.processes import wait_until
from tests.support.statements import statements


def writes(seen):
    return [statement for statement in seen if statement.startswith(("insert", "update", "delete"))]


def test_a_repeated_pop_that_changes_nothing_writes_nothing(client, make_user, runtime):
    _, key = make_user("owner")
    pop(client, key, "w1")
    with statements(runtime) as seen:
        assert pop(client, key, "w1")["id"] is None
    assert writes(seen) == []
    assert not [statement for statement in seen if "from users" in statement]
    # The only read of the worker's row is the look's maintenance probe (horde/workers/duty.py), in the statement
    # that counts its busy threads: no check-in reads it.
    assert all("from chat_jobs" in statement for statement in seen if "from workers" in statement)


def test_a_pop_body_sent_again_is_not_loaded_again_and_a_refused_one_is_refused_again(client, make_user, runtime):
    _, key = make_user("owner")
    name = f"loaded-once-{uuid.uuid4().hex[:8]}"  # a body no earlier test sent
    with mock.patch.object(POP_BODIES.schema, "load", wraps=POP_BODIES.schema.load) as loads:
        for _ in range(3):
            assert pop(client, key, name)["id"] is None
        assert loads.call_count == 1
        for _ in range(2):
            refused = client.post("/api/v2/generate/chat/pop", json={"name": name}, headers={"apikey": key})
            assert refused.status_code == 400 and refused.json["message"].endswith("Missing data for required field.")
        assert loads.call_count == 3


def test_a_text_pop_body_sent_again_is_not_loaded_again(client, make_user, runtime):
    _, key = make_user("owner")
    body = {"name": f"text-loaded-once-{uuid.uuid4().hex[:8]}", "models": ["m1"], "bridge_agent": "test:1:local"}
    with mock.patch.object(TEXT_POP_BODIES.schema, "load", wraps=TEXT_POP_BODIES.schema.load) as loads:
        for _ in range(3):
            popped = client.post("/api/v2/generate/text/pop", json=body, headers={"apikey": key})
            assert popped.status_code == 200, popped.json
        assert loads.call_count == 1


def test_changed_declarations_are_written_at_once_and_used_by_the_claim(client, make_user, runtime):
    _, key = make_user("owner", kudos=100)
    pop(client, key, "w1", max_length=64)
    request_id = queued_id(client, key, max_tokens=64)
    with statements(runtime) as seen:
        assert pop(client, key, "w1", models=["other"], max_length=64)["id"] is None
    assert any(statement.startswith("update workers") for statement in seen)
    with runtime.db.read() as session:
        assert session.query(Worker).one().models == ["other"]
    job = pop(client, key, "w1", max_length=64)
    assert job["id"] and job["payload"]["max_tokens"] == 64
    assert service.read(runtime, request_id).state == "processing"


def test_last_pop_at_is_refreshed_once_the_refresh_interval_passed(client, make_user, runtime):
    _, key = make_user("owner")
    pop(client, key, "w1")
    with runtime.db.transaction() as session:
        session.execute(update(Worker).values(last_pop_at=utcnow() - dt.timedelta(seconds=60)))
    runtime.checkins.refresh_s = 0
    pop(client, key, "w1")
    with runtime.db.read() as session:
        age = utcnow() - session.query(Worker).one().last_pop_at
    assert age < dt.timedelta(seconds=30)


def test_a_pop_leaves_expired_jobs_to_the_sweeper(client, make_user, runtime):
    _, key = make_user("owner", kudos=100)
    pop(client, key, "w1")
    request_id = queued_id(client, key)
    job_id = pop(client, key, "w1")["id"]
    with runtime.db.transaction() as session:
        session.execute(
            update(ChatJob).where(ChatJob.id == job_id).values(deadline_at=utcnow() - dt.timedelta(seconds=1))
        )
    with statements(runtime) as seen:
        pop(client, key, "w2")
    assert not [statement for statement in seen if "deadline_at" in statement]
    assert service.read(runtime, request_id).state == "processing"
    assert service.sweep(runtime) == 1
    assert service.read(runtime, request_id).state == "waiting"


def test_an_identity_is_looked_up_once_then_served_from_the_cache(client, make_user, runtime):
    user, key = make_user("owner", kudos=5)
    first = auth.authenticate(runtime, key)
    with statements(runtime) as seen:
        again = auth.authenticate(runtime, key)
    assert again == first and first.id == user.id and seen == []
    runtime.identities = IdentityCache(ttl_s=0)
    for _ in range(2):
        with statements(runtime) as seen:
            auth.authenticate(runtime, key)
        assert any("from users" in statement for statement in seen)


def test_the_balance_is_never_served_from_the_identity_cache(client, make_user, runtime):
    user, key = make_user("owner", kudos=5)
    assert client.get("/api/v2/find_user", headers={"apikey": key}).json["kudos"] == 5
    from horde.accounts import service as accounts

    with runtime.db.transaction() as session:
        accounts.set_kudos(session, session.get(type(user), user.id), 42)
    assert client.get("/api/v2/find_user", headers={"apikey": key}).json["kudos"] == 42


def test_a_long_poll_woken_for_a_job_taken_meanwhile_looks_once_and_waits_again(client, make_user, runtime):
    """Its look saw no request waiting for its models, so no other poller could use the announcement: it
    does not ask the database again whether to pass it on."""
    _, key = make_user("owner", kudos=100)
    pop(client, key, "w1")  # checked in: the long-poll writes nothing
    channel = jobs_channel("m1")
    answers = []
    poller = threading.Thread(
        target=lambda: answers.append(pop(client.application.test_client(), key, "w1", wait=30)), daemon=True
    )
    poller.start()
    wait_until(lambda: len(runtime.bus._waiting.get(channel, ())) == 1, what="the pop to wait")
    with statements(runtime) as seen:
        runtime.bus.publish(channel)  # as an admission announces a job, which another pop then took
        assert not runtime.bus._waiting.get(channel), "the announcement woke the waiting pop"
        wait_until(lambda: len(runtime.bus._waiting.get(channel, ())) == 1, what="the pop to wait again")
    assert len([statement for statement in seen if not statement.startswith("begin")]) == 1, seen
    request_id = queued_id(client, key)
    poller.join(30)
    assert answers and answers[0]["id"] is not None, "still long-polling, it takes the next job"
    with runtime.db.read() as session:
        assert session.get(ChatJob, answers[0]["id"]).request_id == request_id
