"""PUT and DELETE /workers/{id} and GET /workers/name/{name}: a worker's owner manages it, with the AI Horde's codes.

A worker in maintenance gets no job from either pop (403 WorkerMaintenance, its check-in still written); a deleted
worker's running jobs restart as expired ones, with no reward, and its name is free for a new worker.
"""

from __future__ import annotations

import pytest

from tests.support.native import declaration, pop, queued_id, status, submit
from tests.support.text_api import find_user, text_pop, text_queued, text_status, text_submit


def worker_id(client, name: str) -> str:
    answer = client.get(f"/api/v2/workers/name/{name}")
    assert answer.status_code == 200, answer.json
    return answer.json["id"]


def put(client, key, worker, **body):
    return client.put(f"/api/v2/workers/{worker}", json=body, headers={"apikey": key})


def text_pop_answer(client, key, name, **overrides):
    body = {"name": name, "models": ["m1"], "max_length": 512, "max_context_length": 4096, "threads": 4}
    return client.post("/api/v2/generate/text/pop", json={**body, **overrides}, headers={"apikey": key})


def test_a_worker_in_maintenance_gets_no_text_job_until_its_owner_ends_it(client, make_user):
    _, owner = make_user()
    _, key = make_user(kudos=100)
    text_pop(client, owner, "tw1")
    worker = worker_id(client, "tw1")
    request_id = text_queued(client, key)

    answer = put(client, owner, worker, maintenance=True, maintenance_msg="Swapping the GPU")
    assert (answer.status_code, answer.json) == (200, {"maintenance": True})
    shown = client.get(f"/api/v2/workers/{worker}").json
    assert shown["maintenance_mode"] is True and client.get("/api/v2/workers?type=text").json[0]["maintenance_mode"]
    refused = text_pop_answer(client, owner, "tw1")
    assert (refused.status_code, refused.json) == (403, {"message": "Swapping the GPU", "rc": "WorkerMaintenance"})
    assert text_status(client, request_id)["waiting"] == 1

    moved = text_pop_answer(client, owner, "tw1", max_length=256)  # refused, but its check-in is written
    assert moved.status_code == 403 and client.get(f"/api/v2/workers/{worker}").json["max_length"] == 256

    assert put(client, owner, worker, maintenance=False).json == {"maintenance": False}
    assert text_pop(client, owner, "tw1")["id"] is not None
    assert text_status(client, request_id)["processing"] == 1


def test_a_chat_worker_in_maintenance_gets_no_job_and_a_carried_pop_says_why(client, make_user):
    _, owner = make_user()
    _, key = make_user(kudos=100)
    pop(client, owner, "cw1")
    worker = client.get("/api/v2/workers?type=chat").json[0]["id"]
    first = queued_id(client, key)
    job = pop(client, owner, "cw1")
    assert job["id"] is not None
    assert put(client, owner, worker, maintenance=True).json == {"maintenance": True}
    second = queued_id(client, key)

    refused = client.post("/api/v2/generate/chat/pop", json=declaration("cw1"), headers={"apikey": owner})
    assert refused.status_code == 403
    assert refused.json == {
        "message": "This worker has been put into maintenance mode by its owner",
        "rc": "WorkerMaintenance",
    }
    carried = submit(client, owner, job["id"], pop=declaration("cw1"))
    assert carried.status_code == 200 and carried.json["next"]["id"] is None
    assert carried.json["next"]["rc"] == "WorkerMaintenance"
    assert status(client, key, first).json["state"] == "done"  # the job it held finished and was delivered
    assert status(client, key, second).json["state"] == "waiting"


@pytest.mark.parametrize("kind", ["text", "chat"])
def test_a_model_served_only_in_maintenance_leaves_the_model_list_as_on_the_ai_horde(client, make_user, kind):
    _, owner = make_user()
    if kind == "text":
        text_pop(client, owner, "w1")
    else:
        pop(client, owner, "w1")
    worker = worker_id(client, "w1")

    def listed() -> list[str]:
        return [entry["name"] for entry in client.get(f"/api/v2/status/models?type={kind}").json]

    assert listed() == ["m1"]
    put(client, owner, worker, maintenance=True)
    assert listed() == []
    assert client.get(f"/api/v2/status/models/m1?type={kind}").json == []
    put(client, owner, worker, maintenance=False)
    assert listed() == ["m1"]


def test_only_the_owner_manages_a_worker_with_the_ai_hordes_codes(client, make_user):
    _, owner = make_user()
    _, stranger = make_user()
    text_pop(client, owner, "owned")
    worker = worker_id(client, "owned")
    for body, rc in (
        ({"maintenance": True}, "NotOwner"),
        ({"info": "mine now"}, "NotOwner"),
        ({"name": "stolen-name"}, "NotModerator"),
        ({"team": ""}, "NotModerator"),
        ({"paused": True}, "NotModerator"),
    ):
        answer = put(client, stranger, worker, **body)
        assert (answer.status_code, answer.json["rc"]) == (403, rc), body
    anonymous = client.put(f"/api/v2/workers/{worker}", json={"maintenance": True})
    assert (anonymous.status_code, anonymous.json["rc"]) == (403, "NotOwner")
    deleted = client.delete(f"/api/v2/workers/{worker}", headers={"apikey": stranger})
    assert (deleted.status_code, deleted.json["rc"]) == (403, "NotModerator")
    assert put(client, owner, worker, paused=True).json["rc"] == "NotModerator"  # moderators only; there are none
    assert client.get(f"/api/v2/workers/{worker}").json["maintenance_mode"] is False


def test_info_name_and_team_changes_answer_only_what_changed(client, make_user):
    _, owner = make_user()
    text_pop(client, owner, "first-name")
    text_pop(client, owner, "taken-name")
    worker = worker_id(client, "first-name")

    assert put(client, owner, worker, info="Runs on a 3090", maintenance=None).json == {"info": "Runs on a 3090"}
    assert client.get(f"/api/v2/workers/{worker}").json["info"] == "Runs on a 3090"
    assert put(client, owner, worker, name="second-name", team="").json == {"name": "second-name", "team": "None"}
    assert worker_id(client, "second-name") == worker
    assert client.get("/api/v2/workers/name/first-name").json["rc"] == "WorkerNotFound"

    for body, status_code, rc in (
        ({"name": "taken-name"}, 400, "WorkerNameAlreadyExists"),
        ({"name": "x" * 101}, 400, "TooLongWorkerName"),
        ({"info": "x" * 1001}, 400, "TooLongWorkerName"),
        ({"name": "abc"}, 400, "BadRequest"),
        ({"team": "0bed257b-e57c-4327-ac64-40cdfb1ac5e6"}, 404, "TeamNotFound"),
        ({"maintenance": "perhaps"}, 400, "BadRequest"),
        ({"maintenance_msg": "m" * 301, "maintenance": True}, 400, "BadRequest"),
        ({}, 400, "NoWorkerModSelected"),
        ({"maintenance": None, "unknown": 1}, 400, "NoWorkerModSelected"),
    ):
        answer = put(client, owner, worker, **body)
        assert (answer.status_code, answer.json["rc"]) == (status_code, rc), body
    not_json = client.put(
        f"/api/v2/workers/{worker}", data="[1]", headers={"apikey": owner}, content_type="application/json"
    )
    assert (not_json.status_code, not_json.json["rc"]) == (400, "BadRequest")
    assert put(client, owner, "no-such-worker", maintenance=True).json["rc"] == "WorkerNotFound"
    shown = client.get(f"/api/v2/workers/{worker}").json
    assert (shown["name"], shown["info"], shown["maintenance_mode"]) == ("second-name", "Runs on a 3090", False)
    assert put(client, owner, worker, info="").json == {"info": ""}
    assert client.get(f"/api/v2/workers/{worker}").json["info"] is None


def test_deleting_a_worker_restarts_its_running_job_with_no_reward_and_frees_its_name(client, make_user):
    _, owner = make_user()
    _, key = make_user(kudos=100)
    text_pop(client, owner, "doomed")
    worker = worker_id(client, "doomed")
    request_id = text_queued(client, key)
    job = text_pop(client, owner, "doomed")
    assert job["id"] is not None

    answer = client.delete(f"/api/v2/workers/{worker}", headers={"apikey": owner})
    assert (answer.status_code, answer.json) == (200, {"deleted_id": worker, "deleted_name": "doomed"})
    restarted = text_status(client, request_id)
    assert (restarted["waiting"], restarted["processing"], restarted["restarted"]) == (1, 0, 1)
    late = text_submit(client, owner, job["id"])
    assert (late.status_code, late.json["rc"]) == (400, "AbortedGen")
    assert find_user(client, owner)["kudos"] == 0 and find_user(client, key)["kudos"] == 100

    assert client.get(f"/api/v2/workers/{worker}").json["rc"] == "WorkerNotFound"
    assert client.get("/api/v2/workers/name/doomed").json["rc"] == "WorkerNotFound"
    assert client.get("/api/v2/workers?type=text").json == []
    mine = find_user(client, owner)
    assert (mine["worker_ids"], mine["worker_count"]) == ([], 0)  # Lite's "Manage My Workers" no longer lists it
    again = client.delete(f"/api/v2/workers/{worker}", headers={"apikey": owner})
    assert (again.status_code, again.json["rc"]) == (404, "WorkerNotFound")
    assert put(client, owner, worker, maintenance=True).json["rc"] == "WorkerNotFound"

    reborn = text_pop(client, owner, "doomed", max_length=500)  # new declarations: a check-in, a new worker
    assert reborn["id"] is not None and worker_id(client, "doomed") != worker
    assert find_user(client, owner)["worker_ids"] == [worker_id(client, "doomed")]
    assert text_submit(client, owner, reborn["id"]).json["reward"] > 0


def test_deleting_a_chat_worker_restarts_its_running_chat_job(client, make_user):
    _, owner = make_user()
    _, key = make_user(kudos=100)
    pop(client, owner, "chat-doomed")
    worker = client.get("/api/v2/workers?type=chat").json[0]["id"]
    request_id = queued_id(client, key)
    job = pop(client, owner, "chat-doomed")
    assert client.delete(f"/api/v2/workers/{worker}", headers={"apikey": owner}).status_code == 200
    state = status(client, key, request_id).json
    assert state["state"] == "waiting" and state["faulted"]["rc"] == "ChatJobExpired"
    assert submit(client, owner, job["id"]).json["rc"] == "AbortedGen"
    assert find_user(client, owner)["kudos"] == 0


def test_a_pop_of_a_deleted_worker_remembered_by_the_process_takes_no_job(client, make_user):
    _, owner = make_user()
    _, key = make_user(kudos=100)
    text_pop(client, owner, "remembered")
    worker = worker_id(client, "remembered")
    assert client.delete(f"/api/v2/workers/{worker}", headers={"apikey": owner}).status_code == 200
    request_id = text_queued(client, key)
    assert text_pop(client, owner, "remembered")["id"] is None  # the same declarations: the remembered check-in
    assert text_status(client, request_id)["waiting"] == 1


@pytest.mark.parametrize("path", ["/workers/name/{name}", "/workers/{id}"])
def test_a_worker_is_found_by_name_and_by_id(client, make_user, path):
    _, owner = make_user()
    text_pop(client, owner, "findable")
    worker = worker_id(client, "findable")
    found = client.get("/api/v2" + path.format(name="findable", id=worker)).json
    assert (found["id"], found["name"], found["type"]) == (worker, "findable", "text")


def test_a_name_with_a_slash_and_spaces_is_found(client, make_user):
    _, owner = make_user()
    text_pop(client, owner, "koboldcpp/my worker")
    found = client.get("/api/v2/workers/name/koboldcpp/my%20worker")
    assert (found.status_code, found.json["name"]) == (200, "koboldcpp/my worker")
