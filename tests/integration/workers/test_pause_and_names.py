"""A moderator's pause (no job, and the owner is not told), and worker names unique whatever they look like."""

from __future__ import annotations

from sqlalchemy import insert, select

from horde.workers.models import Worker
from horde.workers.names import fill_missing_keys
from tests.support.moderation import headers, with_role
from tests.support.native import pop, queued_id
from tests.support.text_api import text_pop, text_queued


def worker_id(client, name):
    return client.get(f"/api/v2/workers/name/{name}").json["id"]


def test_a_paused_worker_takes_no_job_and_its_pops_say_nothing_of_it(client, make_user, runtime):
    _, moderator = with_role(runtime, make_user, "moderator")
    _, owner = make_user()
    _, requester = make_user(kudos=1000)
    pop(client, owner, "pausable-chat", models=["pause-model"])
    text_pop(client, owner, "pausable-text", models=["pause-model"])
    for name in ("pausable-chat", "pausable-text"):
        answer = client.put(
            f"/api/v2/workers/{worker_id(client, name)}", json={"paused": True}, headers=headers(moderator)
        )
        assert answer.json == {"paused": True}
    queued_id(client, requester, model="pause-model", max_tokens=16)
    text_queued(client, requester, models=["pause-model"], params={"max_length": 16})
    assert pop(client, owner, "pausable-chat", models=["pause-model"]) == {"id": None, "skipped": {}}
    assert text_pop(client, owner, "pausable-text", models=["pause-model"])["id"] is None
    public = client.get(f"/api/v2/workers/{worker_id(client, 'pausable-text')}", headers=headers(owner)).json
    assert public["paused"] is False  # the owner is not told
    seen = client.get(f"/api/v2/workers/{worker_id(client, 'pausable-text')}", headers=headers(moderator)).json
    assert seen["paused"] is True
    client.put(
        f"/api/v2/workers/{worker_id(client, 'pausable-chat')}", json={"paused": False}, headers=headers(moderator)
    )
    assert pop(client, owner, "pausable-chat", models=["pause-model"])["id"] is not None


def test_a_look_alike_name_is_refused_at_the_first_pop_and_at_a_rename(client, make_user):
    _, bob = make_user()
    _, mallory = make_user()
    text_pop(client, bob, "bob-worker-1", models=["n-model"])
    for look_alike in ("BOB-WORKER-1", "bob\u2010worker-1", "bob\u2212worker\u20131", "\uff42ob-worker-1"):
        body = {"name": look_alike, "models": ["n-model"], "max_length": 64, "max_context_length": 512}
        refused = client.post("/api/v2/generate/text/pop", json=body, headers=headers(mallory))
        assert (refused.status_code, refused.json["rc"]) == (403, "WorkerNameTaken"), look_alike
        chat = client.post(
            "/api/v2/generate/chat/pop",
            json=body | {"features": [], "guarantees": [], "bridge_agent": "t:1:x"},
            headers=headers(mallory),
        )
        assert chat.json["rc"] == "WorkerNameTaken", look_alike
    text_pop(client, mallory, "mallory-worker", models=["n-model"])
    renamed = client.put(
        f"/api/v2/workers/{worker_id(client, 'mallory-worker')}",
        json={"name": "Bob\u2011Worker\u20111"},
        headers=headers(mallory),
    )
    assert (renamed.status_code, renamed.json["rc"]) == (400, "WorkerNameAlreadyExists")
    mine = client.put(
        f"/api/v2/workers/{worker_id(client, 'bob-worker-1')}", json={"name": "BOB-WORKER-1"}, headers=headers(bob)
    )
    assert mine.json == {"name": "BOB-WORKER-1"}  # its own look-alike: the same key, the same worker
    deleted = client.delete(f"/api/v2/workers/{worker_id(client, 'BOB-WORKER-1')}", headers=headers(bob))
    assert deleted.status_code == 200
    text_pop(client, mallory, "bob-worker-1", models=["n-model"])  # a deleted worker's name is free again


def test_the_start_fills_missing_keys_and_reports_the_names_that_collide(runtime, make_user):
    owner, _ = make_user()
    rows = [
        {"id": f"w-{index}", "name": name, "owner_id": owner.id, "models": [], "max_length": 64}
        | {"max_context_length": 512}
        for index, name in enumerate(("Alice-Worker", "alice\u2010worker", "ALICE WORKER", "alice worker", "carol"))
    ]
    with runtime.db.transaction() as session:  # rows as a database before keys had them
        session.execute(insert(Worker), rows)
    with runtime.db.transaction() as session:
        collisions = fill_missing_keys(session.connection())
    assert sorted(collisions) == [["ALICE WORKER", "alice worker"], ["Alice-Worker", "alice\u2010worker"]]
    with runtime.db.read() as session:
        keys = dict(session.execute(select(Worker.name, Worker.name_key).where(Worker.owner_id == owner.id)).all())
    assert keys == {
        "Alice-Worker": "alice-worker",
        "alice\u2010worker": None,
        "ALICE WORKER": "alice worker",
        "alice worker": None,
        "carol": "carol",
    }
    with runtime.db.transaction() as session:  # again: nothing new to fill, the same collisions reported
        assert sorted(fill_missing_keys(session.connection())) == sorted(collisions)


def test_a_workers_owner_and_address_are_shown_to_moderators_and_its_owner(client, make_user, runtime):
    _, moderator = with_role(runtime, make_user, "moderator")
    owner, owner_key = make_user()
    _, stranger = make_user()
    client.put(f"/api/v2/users/{owner.id}", json={"contact": "owner@example.com"}, headers=headers(owner_key))
    body = {"name": "shown-worker", "models": ["s-model"], "max_length": 64, "max_context_length": 512}
    client.post(
        "/api/v2/generate/text/pop", json=body, headers=headers(owner_key), environ_base={"REMOTE_ADDR": "192.0.2.44"}
    )
    path = f"/api/v2/workers/{worker_id(client, 'shown-worker')}"
    private = {"owner": f"{owner.username}#{owner.id}", "ipaddr": "192.0.2.44", "contact": "owner@example.com"}
    for key in (moderator, owner_key):
        seen = client.get(path, headers=headers(key)).json
        assert {field: seen.get(field) for field in private} == private
    for key in (stranger, None):
        assert not set(private) & set(client.get(path, headers=headers(key)).json)
    client.put(f"/api/v2/users/{owner.id}", json={"public_workers": True}, headers=headers(owner_key))
    public = client.get(path).json
    assert public["owner"] == private["owner"] and "ipaddr" not in public and "contact" not in public
    listed = client.get("/api/v2/workers", headers=headers(moderator)).json
    assert [worker["ipaddr"] for worker in listed if worker["name"] == "shown-worker"] == ["192.0.2.44"]
