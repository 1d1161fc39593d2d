"""The AI Horde's user details: /find_user, /users/{id} and /users, their views and their figures."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import select, update

from horde.accounts.models import User
from horde.chat.tokens import text_tokens
from horde.users.details import PAGE_SIZE
from tests.support.native import pop, queued_id, submit
from tests.support.text_api import text_pop, text_queued, text_submit

PRIVATE = {
    "worker_ids",
    "sharedkey_ids",
    "contact",
    "vpn",
    "special",
    "active_generations",
    "monthly_kudos",
    "suspicious",
}
PUBLIC = {
    "username",
    "id",
    "kudos",
    "kudos_details",
    "usage",
    "contributions",
    "records",
    "concurrency",
    "worker_invited",
    "moderator",
    "trusted",
    "flagged",
    "pseudonymous",
    "worker_count",
    "account_age",
    "service",
    "deleted",
    "education",
    "customizer",
    "styles",
}


def get(client, path: str, key: str | None = None):
    return client.get("/api/v2" + path, headers={"apikey": key} if key else {})


def find_user(client, key: str | None) -> dict:
    answer = get(client, "/find_user", key)
    assert answer.status_code == 200, answer.json
    return answer.json


def test_find_user_answers_the_whole_body_in_the_users_own_view(client, make_user):
    user, key = make_user("alice", kudos=100)
    body = find_user(client, key)
    assert set(body) == PUBLIC | PRIVATE | {"evaluating_kudos"}
    assert body["username"] == f"alice#{user.id}" and body["id"] == user.id
    assert body["kudos"] == 100.0 and isinstance(body["kudos"], float)
    assert body["kudos_details"] == {
        "accumulated": 0.0,
        "gifted": 0.0,
        "donated": 0.0,
        "admin": 100.0,
        "received": 0.0,
        "recurring": 0.0,
        "awarded": 0.0,
        "styled": 0.0,
    }
    assert body["pseudonymous"] is True and body["trusted"] is False and body["concurrency"] == 30
    assert body["active_generations"] == {"text": [], "image": [], "alchemy": [], "chat": []}
    assert body["worker_ids"] == [] and body["sharedkey_ids"] == [] and body["worker_count"] == 0
    assert body["monthly_kudos"] == {"amount": 0} and body["evaluating_kudos"] == 0.0 and body["suspicious"] == 0
    assert 0 <= body["account_age"] < 60


def test_a_served_request_shows_in_both_users_records_and_kudos_details(client, make_user):
    _, requester_key = make_user(kudos=100)
    _, owner_key = make_user()
    pop(client, owner_key)
    queued_id(client, requester_key)
    job = pop(client, owner_key)
    reward = submit(client, owner_key, job["id"], content="x" * 400, usage={"completion_tokens": 100}).json["reward"]
    text_pop(client, owner_key)
    text_queued(client, requester_key, params={"max_length": 32})
    text_job = text_pop(client, owner_key)
    text_reward = text_submit(client, owner_key, text_job["id"], generation="A reply.").json["reward"]

    asked, served = find_user(client, requester_key), find_user(client, owner_key)
    spent = reward + text_reward
    assert asked["kudos"] == 100 - spent and asked["kudos_details"]["accumulated"] == -spent
    assert served["kudos"] == spent == served["kudos_details"]["accumulated"]
    assert asked["records"]["request"] == {"image": 0, "text": 2, "interrogation": 0}
    assert served["records"]["fulfillment"] == {"image": 0, "text": 2, "interrogation": 0}
    tokens = 100 + text_tokens("A reply.")  # the text worker sent no count: the Horde's estimate
    assert asked["records"]["usage"] == {"megapixelsteps": 0.0, "tokens": tokens}
    assert served["records"]["contribution"] == {"megapixelsteps": 0.0, "tokens": tokens}
    assert served["worker_count"] == 2 and len(served["worker_ids"]) == 2  # a chat and a text worker
    assert asked["usage"] == {"megapixelsteps": 0.0, "requests": 0}  # image work: zeros
    assert served["contributions"] == {"megapixelsteps": 0.0, "fulfillments": 0}


def test_active_generations_list_the_users_open_requests_of_each_kind(client, make_user):
    _, key = make_user(kudos=100)
    _, owner = make_user()
    pop(client, owner)
    text_pop(client, owner)
    queued_id(client, key)  # served first, in queue order
    still_open = queued_id(client, key)
    text_open = text_queued(client, key)
    job = pop(client, owner)
    submit(client, owner, job["id"])
    active = find_user(client, key)["active_generations"]
    assert active["text"] == [text_open]
    assert active["chat"] == [still_open]
    assert active["image"] == [] and active["alchemy"] == []


def test_the_anonymous_user_is_anonymous_0_and_lists_no_ones_requests(client, make_user):
    _, owner = make_user()
    text_pop(client, owner)
    text_queued(client, "0000000000")
    for key in (None, "0000000000"):
        body = find_user(client, key)
        assert body["username"] == "Anonymous#0" and body["id"] == 0
        assert body["pseudonymous"] is False
        assert body["active_generations"] == {"text": [], "image": [], "alchemy": [], "chat": []}
    assert get(client, "/users/0").json["username"] == "Anonymous#0"


def test_users_id_answers_the_public_view_and_the_own_view_to_its_own_key(client, make_user):
    user, key = make_user("bob", kudos=5)
    _, other_key = make_user()
    public = get(client, f"/users/{user.id}").json
    assert set(public) == PUBLIC and public["username"] == f"bob#{user.id}" and public["kudos"] == 5.0
    assert set(get(client, f"/users/{user.id}", other_key).json) == PUBLIC
    assert set(get(client, f"/users/{user.id}", key).json) == PUBLIC | PRIVATE | {"evaluating_kudos"}


def test_users_id_refusals(client, make_user, runtime):
    user, _ = make_user("bob")
    find_user(client, None)  # the anonymous user exists
    with runtime.db.read() as session:
        anonymous_id = session.scalar(select(User.id).where(User.anonymous.is_(True)))
    for path in (f"/users/bob#{user.id}", "/users/x", "/users/99999", "/users/99999999999999999999"):
        answer = get(client, path)
        assert (answer.status_code, answer.json["rc"]) == (404, "UserNotFound"), path
    assert get(client, f"/users/{anonymous_id}").status_code == 404  # its own id is never its public one
    answer = get(client, f"/users/{user.id}", "not-a-key")
    assert (answer.status_code, answer.json["rc"]) == (401, "InvalidAPIKey")


def test_users_pages_by_kudos_or_age(client, make_user, runtime):
    made = [make_user(f"page-{n:02d}", kudos=n)[0] for n in range(PAGE_SIZE + 3)]
    first = get(client, "/users").json
    assert len(first) == PAGE_SIZE
    kudos = [body["kudos"] for body in first]
    assert kudos == sorted(kudos, reverse=True) and kudos[0] == PAGE_SIZE + 2
    assert all(set(body) == PUBLIC for body in first)
    everyone = first + get(client, "/users?page=2").json
    assert {f"page-{n:02d}#{user.id}" for n, user in enumerate(made)} <= {body["username"] for body in everyone}
    with runtime.db.transaction() as session:  # ages: the newest user becomes the oldest
        session.execute(update(User).where(User.id == made[-1].id).values(created_at=dt.datetime(2000, 1, 1)))
    by_age = get(client, "/users?sort=age").json
    assert by_age[0]["id"] == made[-1].id
    by_kudos = [body["username"] for body in first]
    assert [body["username"] for body in get(client, "/users?sort=nonsense").json] == by_kudos  # the default
    assert get(client, "/users?page=10001").json == []
    assert [body["username"] for body in get(client, "/users?page=0").json] == by_kudos
    answer = get(client, "/users?page=abc")
    assert (answer.status_code, answer.json["param"]) == (400, "page")


def test_a_user_whose_own_worker_serves_it_counts_both_sides_once(client, make_user):
    """The charge and the reward land on one row: on PostgreSQL one statement changes it once, by the net."""
    _, key = make_user(kudos=50)
    pop(client, key)
    queued_id(client, key)
    job = pop(client, key)
    assert submit(client, key, job["id"], content="x" * 200, usage={"completion_tokens": 40}).json["reward"] >= 1
    text_pop(client, key)
    text_queued(client, key)
    text_job = text_pop(client, key)
    assert text_submit(client, key, text_job["id"], generation="Mine.").json["reward"] >= 1
    body = find_user(client, key)
    assert body["kudos"] == 50 and body["kudos_details"]["accumulated"] == 0
    assert body["records"]["request"]["text"] == body["records"]["fulfillment"]["text"] == 2
    tokens = 40 + text_tokens("Mine.")
    assert body["records"]["usage"]["tokens"] == body["records"]["contribution"]["tokens"] == tokens
