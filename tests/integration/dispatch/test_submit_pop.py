"""A submit or fault that carries `pop`: the next job in the same call, after the call itself succeeded."""

from __future__ import annotations

import threading

import pytest

from tests.support.native import declaration, pop, queued_id, status, submit
from tests.support.processes import wait_until

LONG_POLL_JOIN_S = 60


def submit_popping(client, key, job_id, next_pop, **body):
    body.setdefault("content", "Hi there")
    return client.post(
        "/api/v2/generate/chat/submit", json=dict(body, id=job_id, pop=next_pop), headers={"apikey": key}
    )


def fault_popping(client, key, job_id, next_pop):
    return client.post(
        "/api/v2/generate/chat/fault", json={"id": job_id, "reason": "oom", "pop": next_pop}, headers={"apikey": key}
    )


def state(client, key, request_id):
    return status(client, key, request_id).json["state"]


def test_a_submit_with_pop_answers_the_next_job_and_claims_it_once(client, make_user):
    _, owner = make_user("owner")
    pop(client, owner, threads=1)
    first, second = queued_id(client, owner), queued_id(client, owner)
    job = pop(client, owner, threads=1)

    answer = submit_popping(client, owner, job["id"], declaration("w1", threads=1))

    assert answer.status_code == 200, answer.json
    assert set(answer.json) == {"reward", "next"}
    following = answer.json["next"]
    assert following["id"] not in (None, job["id"])
    assert set(following) == {"id", "model", "ttl", "payload"}
    assert following["payload"]["messages"] == [{"role": "user", "content": "Hello"}]
    assert state(client, owner, first) == "done"
    view = status(client, owner, second).json
    assert (view["state"], view["worker_name"], view["attempts"]) == ("processing", "w1", 1)
    assert pop(client, owner, threads=1)["id"] is None  # the one waiting request was taken, and only once
    assert submit(client, owner, following["id"]).status_code == 200
    assert state(client, owner, second) == "done"


def test_a_submit_with_pop_and_nothing_queued_answers_what_pop_would(client, make_user):
    _, owner = make_user("owner")
    pop(client, owner)
    queued_id(client, owner)
    job = pop(client, owner)
    answer = submit_popping(client, owner, job["id"], declaration("w1", models=["other"]))
    assert answer.status_code == 200
    assert answer.json["next"] == {"id": None, "skipped": {}}


def test_without_pop_the_answers_are_unchanged(client, make_user):
    _, owner = make_user("owner")
    pop(client, owner)
    request_id, other = queued_id(client, owner), queued_id(client, owner)
    job = pop(client, owner)
    answer = submit(client, owner, job["id"])
    assert answer.status_code == 200 and set(answer.json) == {"reward"}
    faulted = client.post(
        "/api/v2/generate/chat/fault", json={"id": pop(client, owner)["id"]}, headers={"apikey": owner}
    )
    assert faulted.json == {"message": "OK"}
    assert (state(client, owner, request_id), state(client, owner, other)) == ("done", "waiting")


def test_a_refused_submit_or_fault_takes_no_job(client, make_user):
    _, owner = make_user("owner")
    pop(client, owner, features=["json_object"])
    first = queued_id(client, owner, response_format={"type": "json_object"})
    job = pop(client, owner, features=["json_object"])
    second = queued_id(client, owner)
    refused = submit_popping(client, owner, job["id"], declaration("w1"), content="not json")
    assert (refused.status_code, refused.json["rc"]) == (400, "ChatSubmitNonconformant")
    assert (state(client, owner, first), state(client, owner, second)) == ("waiting", "waiting")

    done = pop(client, owner, features=["json_object"])
    assert submit(client, owner, done["id"], content="{}").status_code == 200
    refusals = {
        "duplicate": submit_popping(client, owner, done["id"], declaration("w1"), content="{}"),
        "fault of a done job": fault_popping(client, owner, done["id"], declaration("w1")),
        "unknown job": submit_popping(client, owner, "no-such-job", declaration("w1")),
        "unknown job (fault)": fault_popping(client, owner, "no-such-job", declaration("w1")),
        "bad body": client.post(
            "/api/v2/generate/chat/submit",
            json={"id": "no-such-job", "finish_reason": "bored", "pop": declaration("w1")},
            headers={"apikey": owner},
        ),
    }
    assert {how: (answer.status_code, answer.json["rc"]) for how, answer in refusals.items()} == {
        "duplicate": (400, "DuplicateGen"),
        "fault of a done job": (400, "DuplicateGen"),
        "unknown job": (404, "JobNotFound"),
        "unknown job (fault)": (404, "JobNotFound"),
        "bad body": (400, "BadRequest"),
    }
    assert sorted([state(client, owner, first), state(client, owner, second)]) == ["done", "waiting"]


@pytest.mark.parametrize(
    "next_pop, param",
    [
        (None, "pop"),
        ("w1", "pop"),
        ({k: v for k, v in declaration("w1").items() if k != "name"}, "pop.name"),
        (declaration("w1", max_length=8), "pop.max_length"),
        (declaration("w1", wait=31), "pop.wait"),
        (declaration("w1", limits={"max_temperature_with_tools": 3}), "pop.limits"),
        (dict(declaration("w1"), colour="blue"), "pop.colour"),
    ],
)
def test_an_invalid_nested_pop_refuses_the_whole_call_before_anything_changes(client, make_user, next_pop, param):
    _, owner = make_user("owner")
    pop(client, owner)
    request_id = queued_id(client, owner)
    job = pop(client, owner)
    waiting = queued_id(client, owner)
    for refused in (
        submit_popping(client, owner, job["id"], next_pop),
        fault_popping(client, owner, job["id"], next_pop),
    ):
        assert (refused.status_code, refused.json["rc"], refused.json["param"]) == (400, "BadRequest", param)
    assert (state(client, owner, request_id), state(client, owner, waiting)) == ("processing", "waiting")
    assert submit(client, owner, job["id"]).status_code == 200  # the job is still the worker's to submit


def test_a_pop_refused_after_the_submit_keeps_the_submit(client, make_user):
    _, owner = make_user("owner")
    _, other = make_user("other")
    pop(client, other, "taken")
    pop(client, owner)
    request_id = queued_id(client, owner)
    job = pop(client, owner)
    answer = submit_popping(client, owner, job["id"], declaration("taken"))
    assert answer.status_code == 200
    assert answer.json["reward"] >= 0
    assert answer.json["next"]["id"] is None
    assert answer.json["next"]["rc"] == "WorkerNameTaken"
    assert answer.json["next"]["message"]
    assert state(client, owner, request_id) == "done"


def test_a_fault_with_pop_may_take_the_restarted_request_back(client, make_user):
    _, owner = make_user("owner")
    pop(client, owner)
    request_id = queued_id(client, owner)
    job = pop(client, owner)
    answer = fault_popping(client, owner, job["id"], declaration("w1"))
    assert answer.status_code == 200 and answer.json["message"] == "OK"
    assert answer.json["next"]["id"] not in (None, job["id"])
    view = status(client, owner, request_id).json
    assert (view["state"], view["attempts"], view["faulted"]["rc"]) == ("processing", 2, "ChatWorkerFault")


def test_the_nested_pop_respects_the_workers_threads(client, make_user):
    _, owner = make_user("owner")
    pop(client, owner, "busy", threads=1)
    pop(client, owner, "w1", threads=1)
    queued_id(client, owner)
    queued_id(client, owner)
    held = pop(client, owner, "busy", threads=1)
    job = pop(client, owner, "w1", threads=1)
    queued_id(client, owner)
    answer = submit_popping(client, owner, job["id"], declaration("busy", threads=1))
    assert answer.json["next"] == {"id": None, "skipped": {"threads": 1}}
    assert submit(client, owner, held["id"]).status_code == 200


def test_a_long_poll_inside_a_submit_gets_a_job_queued_while_it_waits(client, make_user):
    _, owner = make_user("owner")
    pop(client, owner)
    request_id = queued_id(client, owner)
    job = pop(client, owner)
    answers = []
    held = client.application.test_client()
    submitter = threading.Thread(
        target=lambda: answers.append(submit_popping(held, owner, job["id"], declaration("w1", wait=20)))
    )
    submitter.start()
    wait_until(lambda: _open_long_polls(client) == 1, what="the submit's pop to be held open")
    assert state(client, owner, request_id) == "done"  # the submit committed before its pop
    queued = queued_id(client, owner)
    submitter.join(LONG_POLL_JOIN_S)
    assert answers and answers[0].status_code == 200
    assert answers[0].json["next"]["id"] is not None
    assert status(client, owner, queued).json["state"] == "processing"


def _open_long_polls(client) -> float:
    for line in client.get("/metrics").text.splitlines():
        if line.startswith("horde_open_long_polls "):
            return float(line.split()[1])
    return 0.0


def test_the_anonymous_user_cannot_submit_with_pop(client):
    answer = submit_popping(client, "0000000000", "no-such-job", declaration("w1"))
    assert (answer.status_code, answer.json["rc"]) == (403, "AnonForbiddenWorker")


def test_a_concurrent_submit_with_pop_and_plain_pops_give_each_job_once(client, make_user, database_url):
    """In one process, over threads; the two-process race on PostgreSQL is in tests/e2e/test_races.py."""
    if not database_url.startswith("postgresql"):
        pytest.skip("concurrent claims are the PostgreSQL path (FOR UPDATE SKIP LOCKED)")
    from tests.support.races import fire_together

    _, owner = make_user("owner")
    pop(client, owner, threads=50)
    for _ in range(8):
        queued_id(client, owner)
    held = [pop(client, owner, threads=50)["id"] for _ in range(4)]

    def popping_submit(job_id):
        return lambda: submit_popping(
            client.application.test_client(), owner, job_id, declaration("w1", threads=50)
        ).json["next"]["id"]

    def plain_pop():
        return pop(client.application.test_client(), owner, threads=50)["id"]

    given = fire_together([popping_submit(job_id) for job_id in held] + [plain_pop] * 4)
    assert not [error for error in given if isinstance(error, Exception)]
    handed = [job_id for job_id in given if job_id is not None]
    assert len(handed) == len(set(handed)) == 4
