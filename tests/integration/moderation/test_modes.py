"""The Horde's modes: who sees and sets them, and what each changes (docs/reference/moderation.md)."""

from __future__ import annotations

import datetime as dt

import pytest
from sqlalchemy import update

from horde.accounts.models import User
from horde.timeutil import utcnow
from tests.support.moderation import headers, put_user, set_modes, with_role
from tests.support.native import pop, queued_id, status, submit
from tests.support.text_api import text_async, text_pop


@pytest.fixture
def staff(runtime, make_user):
    """(moderator key, admin key)."""
    return with_role(runtime, make_user, "moderator")[1], with_role(runtime, make_user, "admin")[1]


def test_raid_mode_is_shown_to_moderators_only_and_only_admins_set_modes(client, make_user, staff):
    moderator, admin = staff
    _, key = make_user()
    assert client.get("/api/v2/status/modes").json == {"maintenance_mode": False, "invite_only_mode": False}
    assert set_modes(client, moderator, raid_mode=True).json["rc"] == "NotAdmin"
    assert set_modes(client, key, raid_mode=True).json["rc"] == "NotAdmin"
    assert set_modes(client, None, raid_mode=True).json["rc"] == "NotAdmin"
    assert set_modes(client, admin).json["rc"] == "NoHordeModSelected"
    assert set_modes(client, admin, raid_mode=True, invite_only_mode=None).json == {"raid_mode": True}
    assert client.get("/api/v2/status/modes").json == {"maintenance_mode": False, "invite_only_mode": False}
    seen = client.get("/api/v2/status/modes", headers=headers(moderator)).json
    assert seen == {"maintenance_mode": False, "invite_only_mode": False, "raid_mode": True}
    refused = client.get("/api/v2/status/modes", headers=headers(key))
    assert (refused.status_code, refused.json["rc"]) == (403, "NotModerator")  # the AI Horde's answer


def test_maintenance_refuses_new_requests_but_lets_the_queued_ones_finish(client, make_user, staff):
    _, admin = staff
    _, requester = make_user(kudos=1000)
    _, worker_key = make_user()
    pop(client, worker_key, "maint-worker", models=["maint-model"])
    waiting = queued_id(client, requester, model="maint-model", max_tokens=16)
    assert set_modes(client, admin, maintenance_mode=True).json == {"maintenance_mode": True}

    native = client.post(
        "/api/v2/generate/chat/async",
        json={"model": "maint-model", "messages": [{"role": "user", "content": "Hi"}]},
        headers=headers(requester),
    )
    assert (native.status_code, native.json["rc"]) == (503, "MaintenanceMode")
    assert native.headers["Retry-After"] == "60"
    text = text_async(client, requester, models=["maint-model"])
    assert (text.status_code, text.json["rc"]) == (503, "MaintenanceMode")
    front = client.post(
        "/v1/chat/completions",
        json={"model": "maint-model", "messages": [{"role": "user", "content": "Hi"}]},
        headers={"Authorization": f"Bearer {requester}"},
    )
    assert front.status_code == 503 and front.json["error"]["code"] == "MaintenanceMode"
    assert front.headers["x-should-retry"] == "false"
    job = pop(client, worker_key, "maint-worker", models=["maint-model"])  # workers keep popping
    assert job["id"] is not None and submit(client, worker_key, job["id"]).status_code == 200
    assert status(client, requester, waiting).json["state"] == "done"
    assert set_modes(client, admin, maintenance_mode=False).status_code == 200
    assert queued_id(client, requester, model="maint-model", max_tokens=16)


def test_invite_only_mode_counts_each_users_invited_workers(client, make_user, staff):
    moderator, admin = staff
    veteran, veteran_key = make_user()
    newcomer, newcomer_key = make_user()
    text_pop(client, veteran_key, "veteran-worker", models=["inv-model"])
    assert set_modes(client, admin, invite_only_mode=True).status_code == 200
    text_pop(client, veteran_key, "veteran-worker", models=["inv-model"])  # a worker that exists keeps popping
    body = {"name": "newcomer-worker", "models": ["inv-model"], "max_length": 64, "max_context_length": 512}
    refused = client.post("/api/v2/generate/text/pop", json=body, headers=headers(newcomer_key))
    assert (refused.status_code, refused.json["rc"]) == (403, "WorkerInviteOnly")
    chat_refused = client.post(
        "/api/v2/generate/chat/pop",
        json=body | {"features": [], "guarantees": [], "bridge_agent": "t:1:x"},
        headers=headers(newcomer_key),
    )
    assert chat_refused.json["rc"] == "WorkerInviteOnly"
    assert put_user(client, moderator, newcomer.id, worker_invited=1).status_code == 200
    assert client.post("/api/v2/generate/text/pop", json=body, headers=headers(newcomer_key)).status_code == 200
    second = client.post(
        "/api/v2/generate/text/pop", json=body | {"name": "second-worker"}, headers=headers(newcomer_key)
    )
    assert second.json["rc"] == "WorkerInviteOnly"
    assert veteran.id != newcomer.id


def test_raid_mode_stops_new_untrusted_accounts(client, make_user, runtime, staff):
    _, admin = staff
    _, fresh = make_user(kudos=100)
    _, trusted = make_user(kudos=100, trusted=True)
    old, old_key = make_user(kudos=100)
    with runtime.db.transaction() as session:
        session.execute(update(User).where(User.id == old.id).values(created_at=utcnow() - dt.timedelta(days=30)))
    _, worker_key = make_user()
    text_pop(client, worker_key, "raid-worker", models=["raid-model"])
    assert set_modes(client, admin, raid_mode=True).status_code == 200
    refused = text_async(client, fresh, models=["raid-model"])
    assert (refused.status_code, refused.json["rc"]) == (403, "NotTrusted")
    assert text_async(client, trusted, models=["raid-model"]).status_code == 202
    assert text_async(client, old_key, models=["raid-model"]).status_code == 202
    assert text_async(client, "0000000000", models=["raid-model"]).status_code == 202  # anonymous: its address's rate
