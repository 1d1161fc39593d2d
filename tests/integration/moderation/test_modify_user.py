"""PUT /api/v2/users/{id}: each field, who may set it, its refusals, and what it changes
(docs/reference/moderation.md)."""

from __future__ import annotations

import pytest
from sqlalchemy import select, update

from horde.accounts.models import KudosEntry, User
from horde.workers.models import Worker
from tests.support.moderation import get_user, put_user, with_role
from tests.support.native import pop, queued_id, submit
from tests.support.text_api import find_user, text_async, text_pop, text_queued


@pytest.fixture
def staff(runtime, make_user):
    """(moderator key, admin key, the admin's id)."""
    _, moderator = with_role(runtime, make_user, "moderator")
    admin, admin_key = with_role(runtime, make_user, "admin")
    return moderator, admin_key, admin.id


def test_an_admin_adds_kudos_as_one_ledger_adjustment_naming_the_admin(client, make_user, runtime, staff):
    _, admin_key, admin_id = staff
    user, _ = make_user(kudos=10)
    answer = put_user(client, admin_key, user.id, kudos=-4.0, reason="refund")
    assert answer.status_code == 200, answer.json
    assert answer.json == {"new_kudos": 6.0}
    with runtime.db.read() as session:
        entries = session.execute(
            select(KudosEntry.amount, KudosEntry.kind, KudosEntry.counterpart_id).where(KudosEntry.user_id == user.id)
        ).all()
    assert sorted(entries) == [(-4, "adjustment", admin_id), (10, "grant", None)]


def test_each_field_answers_its_new_value_and_the_user_details_show_it(client, make_user, staff):
    moderator, admin_key, _ = staff
    user, key = make_user()
    changed = {
        "concurrency": 5,
        "worker_invited": 2,
        "trusted": True,
        "flagged": True,
        "admin_comment": "sent garbage twice",
        "public_workers": True,
        "username": "renamed-user",
        "contact": "renamed@example.com",
    }
    answer = put_user(client, moderator, user.id, **changed)
    assert answer.status_code == 200, answer.json
    assert answer.json == changed
    assert put_user(client, admin_key, user.id, usage_multiplier=1.5, moderator=True).json == {
        "usage_multiplier": 1.5,
        "moderator": True,
    }
    public = get_user(client, None, user.id).json
    assert (public["concurrency"], public["worker_invited"], public["moderator"]) == (5, 2, True)
    assert (public["trusted"], public["flagged"], public["username"]) == (True, True, f"renamed-user#{user.id}")
    assert "contact" not in public and "admin_comment" not in public and public["worker_ids"] == []
    own = find_user(client, key)
    assert own["contact"] == "renamed@example.com" and "admin_comment" not in own
    assert get_user(client, moderator, user.id).json["admin_comment"] == "sent garbage twice"


def test_who_may_set_what(client, make_user, staff):
    moderator, admin_key, _ = staff
    user, key = make_user()
    other, other_key = make_user()
    for field, value in (("kudos", 5), ("usage_multiplier", 2.0), ("moderator", True)):
        refused = put_user(client, moderator, user.id, **{field: value})
        assert (refused.status_code, refused.json["rc"]) == (403, "NotAdmin"), field
    for field, value in (("concurrency", 3), ("flagged", True), ("trusted", True), ("admin_comment", "hello")):
        refused = put_user(client, key, user.id, **{field: value})
        assert (refused.status_code, refused.json["rc"]) == (403, "NotModerator"), field
    assert put_user(client, key, user.id, contact="me@example.com").status_code == 200  # the user's own fields
    assert put_user(client, other_key, user.id, contact="x@example.com").json["rc"] == "NotModerator"
    assert put_user(client, None, user.id, contact="x@example.com").json["rc"] == "NotModerator"
    # One refused field writes nothing of the others.
    mixed = put_user(client, moderator, user.id, concurrency=7, kudos=100)
    assert mixed.json["rc"] == "NotAdmin" and get_user(client, None, user.id).json["concurrency"] == 30
    assert put_user(client, admin_key, other.id, concurrency=7).status_code == 200  # an admin moderates too


@pytest.mark.parametrize(
    ("body", "status", "rc", "param"),
    [
        ({}, 400, "NoUserModSelected", None),
        ({"concurrency": None}, 400, "NoUserModSelected", None),
        ({"concurrency": 501}, 400, "BadRequest", "concurrency"),
        ({"usage_multiplier": 0.05}, 400, "BadRequest", "usage_multiplier"),
        ({"kudos": 2.5}, 400, "BadRequest", "kudos"),
        ({"kudos": 10**16}, 400, "BadRequest", "kudos"),
        ({"username": "x" * 51}, 400, "TooLongUserName", None),
        ({"username": "ab"}, 400, "BadRequest", "username"),
        ({"username": "tab\there"}, 400, "BadRequest", "username"),
        ({"admin_comment": "x" * 501}, 400, "BadRequest", "admin_comment"),
        ({"monthly_kudos": 100}, 400, "BadRequest", "monthly_kudos"),
        ({"undelete": True}, 400, "BadRequest", "undelete"),
        ({"concurrency": "many"}, 400, "BadRequest", "concurrency"),
    ],
)
def test_refusals_name_the_field_and_change_nothing(client, make_user, staff, body, status, rc, param):
    _, admin_key, _ = staff
    user, _ = make_user(kudos=3)
    answer = put_user(client, admin_key, user.id, **body)
    assert (answer.status_code, answer.json["rc"], answer.json.get("param")) == (status, rc, param)
    after = get_user(client, None, user.id).json
    assert (after["kudos"], after["concurrency"], after["username"]) == (3.0, 30, f"{user.username}#{user.id}")


def test_no_such_user_the_anonymous_user_and_an_admins_role(client, make_user, staff, runtime):
    moderator, _, admin_id = staff
    assert put_user(client, moderator, 999_999, trusted=True).json["rc"] == "UserNotFound"
    assert client.put("/api/v2/users/abc", json={"trusted": True}, headers={"apikey": moderator}).status_code == 404
    assert put_user(client, moderator, 0, trusted=True).json["rc"] == "Forbidden"  # Anonymous#0
    _, other_admin_key = with_role(runtime, make_user, "admin")
    demoted = put_user(client, other_admin_key, admin_id, moderator=False)
    assert (demoted.status_code, demoted.json["param"]) == (403, "moderator")


def test_a_username_may_be_shared_as_registration_allows(client, make_user, staff):
    """Names are not unique (the AI Horde's rule): `name#id` tells two users apart."""
    moderator, _, _ = staff
    first, _ = make_user()
    second, _ = make_user()
    assert put_user(client, moderator, second.id, username=first.username).status_code == 200
    shown = {get_user(client, None, user.id).json["username"] for user in (first, second)}
    assert shown == {f"{first.username}#{first.id}", f"{first.username}#{second.id}"}


def test_a_moderator_made_by_an_admin_moderates_from_the_next_request(client, make_user, staff):
    _, admin_key, _ = staff
    promoted, promoted_key = make_user()
    target, _ = make_user()
    assert put_user(client, promoted_key, target.id, trusted=True).json["rc"] == "NotModerator"  # cached as a user
    assert put_user(client, admin_key, promoted.id, moderator=True).status_code == 200
    assert put_user(client, promoted_key, target.id, trusted=True).status_code == 200
    assert get_user(client, None, promoted.id).json["trusted"] is True  # a moderator is trusted
    assert put_user(client, admin_key, promoted.id, moderator=False).status_code == 200
    assert put_user(client, promoted_key, target.id, trusted=False).json["rc"] == "NotModerator"


def test_a_flagged_users_workers_take_no_job_earn_nothing_and_it_sends_no_kudos(client, make_user, staff):
    moderator, _, _ = staff
    owner, owner_key = make_user(kudos=50)
    requester, requester_key = make_user(kudos=1000)
    pop(client, owner_key, "flag-worker", models=["flag-model"])
    request_id = queued_id(client, requester_key, model="flag-model", max_tokens=16)
    job = pop(client, owner_key, "flag-worker", models=["flag-model"])
    assert job["id"] is not None
    assert put_user(client, moderator, owner.id, flagged=True).status_code == 200
    # The running job ended with no reward; the request went back to the queue, for another worker.
    late = submit(client, owner_key, job["id"])
    assert late.status_code == 403 and late.json["rc"] == "WorkerFlaggedMaintenance"
    refused = client.post(
        "/api/v2/generate/chat/pop",
        json={"name": "flag-worker", "models": ["flag-model"], "max_length": 64, "max_context_length": 512},
        headers={"apikey": owner_key},
    )
    assert (refused.status_code, refused.json["rc"]) == (403, "WorkerFlaggedMaintenance")
    _, other_key = make_user()
    other_job = pop(client, other_key, "honest-worker", models=["flag-model"])
    assert other_job["payload"] and submit(client, other_key, other_job["id"]).status_code == 200
    assert find_user(client, owner_key)["kudos"] == 50.0  # nothing earned
    sent = client.post(
        "/api/v2/kudos/transfer", json={"username": f"x#{requester.id}", "amount": 5}, headers={"apikey": owner_key}
    )
    assert (sent.status_code, sent.json["rc"]) == (400, "SourceAccountFlagged")
    received = client.post(
        "/api/v2/kudos/transfer", json={"username": f"x#{owner.id}", "amount": 5}, headers={"apikey": requester_key}
    )
    assert (received.status_code, received.json["rc"]) == (400, "TargetAccountFlagged")
    assert put_user(client, moderator, owner.id, flagged=False).status_code == 200
    assert pop(client, owner_key, "flag-worker", models=["flag-model"])["id"] is None  # back on duty, nothing waits
    assert request_id


def test_trust_lifts_a_moderators_pause(client, make_user, runtime, staff):
    moderator, _, _ = staff
    owner, owner_key = make_user()
    text_pop(client, owner_key, "paused-then-trusted", models=["trust-model"])
    worker_id = client.get("/api/v2/workers/name/paused-then-trusted").json["id"]
    assert client.put(f"/api/v2/workers/{worker_id}", json={"paused": True}, headers={"apikey": moderator}).json == {
        "paused": True
    }
    assert put_user(client, moderator, owner.id, trusted=True).status_code == 200
    with runtime.db.read() as session:
        assert session.get(Worker, worker_id).paused is False


def test_concurrency_bounds_the_requests_in_flight_of_each_kind(client, make_user, staff):
    moderator, _, _ = staff
    user, key = make_user(kudos=10_000)
    _, worker_key = make_user()
    pop(client, worker_key, "concurrency-chat", models=["cc-model"])
    text_pop(client, worker_key, "concurrency-text", models=["cc-model"])
    assert put_user(client, moderator, user.id, concurrency=2).status_code == 200
    first, second = (queued_id(client, key, model="cc-model", max_tokens=16) for _ in range(2))
    third = client.post(
        "/api/v2/generate/chat/async",
        json={"model": "cc-model", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 16},
        headers={"apikey": key},
    )
    assert (third.status_code, third.json["rc"]) == (429, "TooManyPrompts")
    assert third.json["metadata"] == {"in_flight": 2, "concurrency": 2}
    # Text counts generations: n=2 fills the bound, another is refused; chat's own count is apart.
    assert text_async(client, key, models=["cc-model"], params={"n": 2, "max_length": 16}).status_code == 202
    refused = text_async(client, key, models=["cc-model"], params={"max_length": 16})
    assert (refused.status_code, refused.json["rc"]) == (429, "TooManyPrompts")
    # A request that ends frees its place.
    assert client.delete(f"/api/v2/generate/chat/status/{first}", headers={"apikey": key}).status_code == 200
    assert queued_id(client, key, model="cc-model", max_tokens=16) != second


def test_a_usage_multiplier_multiplies_the_charge_not_the_reward(client, make_user, runtime, staff):
    _, admin_key, _ = staff
    requester, requester_key = make_user(kudos=10_000)
    _, owner_key = make_user()
    assert put_user(client, admin_key, requester.id, usage_multiplier=2.0).status_code == 200
    text_pop(client, owner_key, "multiplied-text", models=["mult-model"])
    request_id = text_queued(client, requester_key, models=["mult-model"], params={"max_length": 16})
    job = text_pop(client, owner_key, "multiplied-text", models=["mult-model"])
    reward = client.post(
        "/api/v2/generate/text/submit",
        json={"id": job["id"], "generation": "Some words of a reply."},
        headers={"apikey": owner_key},
    ).json["reward"]
    assert reward >= 1
    assert find_user(client, owner_key)["kudos"] == reward
    assert find_user(client, requester_key)["kudos"] == 10_000 - 2 * reward
    with runtime.db.read() as session:
        charge = session.scalar(
            select(KudosEntry.amount).where(KudosEntry.request_id == request_id, KudosEntry.kind == "charge")
        )
        multiplier = session.scalar(select(User.usage_multiplier).where(User.id == requester.id))
    assert (charge, multiplier) == (-2 * reward, 2.0)


def test_the_database_refuses_a_flagged_user_even_before_its_processes_forget_its_identity(client, make_user, runtime):
    """The flag's own checks, apart from the identity every process forgets: the transfer's compare-and-set and the
    pop's claim read the flag from the database at the moment they run."""
    owner, owner_key = make_user(kudos=50)
    recipient, requester_key = make_user(kudos=100)
    pop(client, owner_key, "cas-worker", models=["cas-model"])
    queued_id(client, requester_key, model="cas-model", max_tokens=16)
    assert find_user(client, owner_key)["flagged"] is False  # the identity is cached, unflagged
    with runtime.db.transaction() as session:  # flagged behind the cache's back, as another process's change
        session.execute(update(User).where(User.id == owner.id).values(flagged=True))
    sent = client.post(
        "/api/v2/kudos/transfer", json={"username": f"x#{recipient.id}", "amount": 5}, headers={"apikey": owner_key}
    )
    assert (sent.status_code, sent.json["rc"]) == (400, "SourceAccountFlagged")
    refused = client.post(
        "/api/v2/generate/chat/pop",
        json={"name": "cas-worker", "models": ["cas-model"], "max_length": 1024, "max_context_length": 8192}
        | {"threads": 4, "features": [], "guarantees": [], "bridge_agent": "test:1:local"},
        headers={"apikey": owner_key},
    )
    assert (refused.status_code, refused.json["rc"]) == (403, "WorkerFlaggedMaintenance")
    assert find_user(client, owner_key)["kudos"] == 50.0
