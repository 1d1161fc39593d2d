"""POST /api/v2/users/{id}/api_key: the user's new key works at once and the old one is refused from the next
request on, in this process too (its identity cache had the old key); the table's refusals for everyone else."""

from __future__ import annotations

from sqlalchemy import select

from horde.accounts.models import User


def _me(client, key):
    return client.get("/api/v2/find_user", headers={"apikey": key})


def test_the_new_key_works_and_the_old_one_is_refused_at_once(client, make_user, runtime):
    user, old = make_user(kudos=10)
    assert _me(client, old).status_code == 200  # cached now
    answer = client.post(f"/api/v2/users/{user.id}/api_key", headers={"apikey": old})
    assert answer.status_code == 200 and set(answer.json) == {"api_key"}
    new = answer.json["api_key"]
    assert new != old and len(new) == 22
    refused = _me(client, old)
    assert (refused.status_code, refused.json["rc"]) == (401, "InvalidAPIKey")
    mine = _me(client, new).json
    assert (mine["id"], mine["kudos"]) == (user.id, 10)
    with runtime.db.read() as session:
        assert session.scalar(select(User.api_key_hash).where(User.id == user.id)) != new  # kept hashed


def test_a_key_rotated_twice_leaves_only_the_last(client, make_user):
    user, first = make_user()
    second = client.post(f"/api/v2/users/{user.id}/api_key", headers={"apikey": first}).json["api_key"]
    third = client.post(f"/api/v2/users/{user.id}/api_key", headers={"apikey": second}).json["api_key"]
    assert [_me(client, key).status_code for key in (first, second, third)] == [401, 401, 200]


def test_the_users_shared_keys_keep_working(client, make_user):
    user, key = make_user(kudos=50)
    shared = client.put("/api/v2/sharedkeys", json={"kudos": 5}, headers={"apikey": key}).json["id"]
    client.post(f"/api/v2/users/{user.id}/api_key", headers={"apikey": key})
    assert _me(client, shared).status_code == 200


def test_nobody_else_may_rotate_a_key(client, make_user):
    user, key = make_user()
    _other, other_key = make_user()
    shared = client.put("/api/v2/sharedkeys", json={"kudos": 5}, headers={"apikey": key}).json["id"]
    refusals = [
        client.post(f"/api/v2/users/{user.id}/api_key", headers={"apikey": other_key}),
        client.post(f"/api/v2/users/{user.id}/api_key", headers={"apikey": shared}),
        client.post(f"/api/v2/users/{user.id}/api_key"),
        client.post(f"/api/v2/users/{user.id}/api_key", headers={"apikey": "not-a-key"}),
    ]
    assert [(answer.status_code, answer.json["rc"]) for answer in refusals] == [
        (403, "Forbidden"),
        (401, "InvalidAPIKey"),
        (403, "AnonForbidden"),
        (401, "InvalidAPIKey"),
    ]
    assert _me(client, key).status_code == 200 and _me(client, other_key).status_code == 200
    assert client.post("/api/v2/users/abc/api_key", headers={"apikey": key}).json["rc"] == "NotFound"
