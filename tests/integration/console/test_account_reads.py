"""Who reads a user's account through the console (own key, a moderator; not another user, a shared key or the
anonymous user), the user's workers as GET /workers/{id} shows them to their owner, and the owner's view of
GET /users/{id}, which lists its shared keys."""

from __future__ import annotations

from horde.accounts import roles
from tests.support.native import pop
from tests.support.text_api import text_pop

ACCOUNT_PATHS = ("ledger", "balance_history", "usage", "workers")


def test_only_the_user_and_moderators_read_the_account(client, make_user, runtime):
    owner, owner_key = make_user(kudos=100)
    _other, other_key = make_user(kudos=100)
    moderator, moderator_key = make_user()
    with runtime.db.transaction() as session:
        roles.set_role(session, moderator.username, "moderator")
    shared = client.put("/api/v2/sharedkeys", json={"kudos": 5}, headers={"apikey": owner_key}).json["id"]
    for tail in ACCOUNT_PATHS:
        path = f"/api/v2/users/{owner.id}/{tail}"
        assert client.get(path, headers={"apikey": owner_key}).status_code == 200, tail
        assert client.get(path, headers={"apikey": moderator_key}).status_code == 200, tail
        refused = {
            "other": client.get(path, headers={"apikey": other_key}),
            "shared": client.get(path, headers={"apikey": shared}),
            "anonymous": client.get(path),
            "anonymous key": client.get(path, headers={"apikey": "0000000000"}),
        }
        seen = {name: (answer.status_code, answer.json["rc"]) for name, answer in refused.items()}
        assert seen == {
            "other": (403, "Forbidden"),
            "shared": (401, "InvalidAPIKey"),
            "anonymous": (403, "AnonForbidden"),
            "anonymous key": (403, "AnonForbidden"),
        }, tail


def test_the_users_workers_match_the_registrys_detail(client, make_user):
    owner, key = make_user()
    _other, other_key = make_user()
    pop(client, key, "console-chat-worker", models=["console-chat-model"])
    text_pop(client, key, "console-text-worker", models=["console-text-model"])
    pop(client, other_key, "console-someone-elses", models=["console-chat-model"])
    listed = client.get(f"/api/v2/users/{owner.id}/workers", headers={"apikey": key}).json
    assert [worker["name"] for worker in listed] == ["console-chat-worker", "console-text-worker"]
    for worker in listed:
        detail = client.get(f"/api/v2/workers/{worker['id']}", headers={"apikey": key}).json
        console_only = {"speed", "jobs", "kudos_earned", "maintenance_msg"}
        assert {name: value for name, value in worker.items() if name not in console_only | {"uptime"}} == {
            name: value for name, value in detail.items() if name != "uptime"
        }
        assert worker["speed"] == detail["performance"] and worker["jobs"] == detail["requests_fulfilled"]
        assert worker["kudos_earned"] == detail["kudos_rewards"] and worker["maintenance_msg"] is None
        assert worker["online"] is True
    assert {worker["models"][0] for worker in listed} == {"console-chat-model", "console-text-model"}


def test_a_workers_maintenance_message_is_listed(client, make_user):
    owner, key = make_user()
    pop(client, key, "console-resting-worker", models=["console-chat-model"])
    worker_id = client.get("/api/v2/workers/name/console-resting-worker").json["id"]
    changed = client.put(
        f"/api/v2/workers/{worker_id}",
        json={"maintenance": True, "maintenance_msg": "back soon"},
        headers={"apikey": key},
    )
    assert changed.status_code == 200, changed.json
    (listed,) = client.get(f"/api/v2/users/{owner.id}/workers", headers={"apikey": key}).json
    assert (listed["maintenance_mode"], listed["maintenance_msg"]) == (True, "back soon")


def test_the_owners_view_of_the_user_lists_its_shared_keys(client, make_user):
    owner, key = make_user(kudos=10)
    made = [client.put("/api/v2/sharedkeys", json={"kudos": 5}, headers={"apikey": key}).json["id"] for _ in range(2)]
    assert client.get(f"/api/v2/users/{owner.id}", headers={"apikey": key}).json["sharedkey_ids"] == made
    assert "sharedkey_ids" not in client.get(f"/api/v2/users/{owner.id}").json
