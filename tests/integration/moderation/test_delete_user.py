"""DELETE /api/v2/users/{id}: the user's keys stop working at once, its workers, shared keys and open requests go,
its ledger entries stay (the balances equal the ledger after every test, conftest's check)."""

from __future__ import annotations

from sqlalchemy import func, select

from horde.accounts.models import KudosEntry, SharedKey, User
from horde.chat.models import ChatRequest
from horde.text.models import TextRequest
from horde.workers.models import Worker
from tests.support.moderation import delete_user, get_user, put_user, with_role
from tests.support.native import pop, queued_id
from tests.support.text_api import text_pop, text_queued


def test_a_user_deletes_itself_and_everything_it_held_goes_but_its_ledger(client, make_user, runtime):
    user, key = make_user(kudos=500)
    _, worker_key = make_user()
    shared = client.put("/api/v2/sharedkeys", json={"kudos": 50}, headers={"apikey": key}).json["id"]
    pop(client, key, "doomed-chat", models=["del-model"])
    text_pop(client, key, "doomed-text", models=["del-model"])
    text_pop(client, worker_key, "survivor-text", models=["del-model"])
    chat_request = queued_id(client, key, model="del-model", max_tokens=16)
    text_request = text_queued(client, key, models=["del-model"], params={"max_length": 16})
    running = text_pop(client, worker_key, "survivor-text", models=["del-model"])
    assert running["id"] is not None
    with runtime.db.read() as session:
        entries_before = session.scalar(
            select(func.count()).select_from(KudosEntry).where(KudosEntry.user_id == user.id)
        )

    answer = delete_user(client, key, user.id)
    assert (answer.status_code, answer.json) == (200, {"message": "OK"})

    assert client.get("/api/v2/find_user", headers={"apikey": key}).json["rc"] == "InvalidAPIKey"
    assert client.get("/api/v2/find_user", headers={"apikey": shared}).json["rc"] == "InvalidAPIKey"
    assert client.get("/api/v2/workers/name/doomed-chat").status_code == 404
    assert client.get("/api/v2/workers/name/doomed-text").status_code == 404
    with runtime.db.read() as session:
        assert session.get(ChatRequest, chat_request).state == "cancelled"
        assert session.get(TextRequest, text_request).state == "cancelled"
    late = client.post(
        "/api/v2/generate/text/submit",
        json={"id": running["id"], "generation": "Late."},
        headers={"apikey": worker_key},
    )
    assert late.status_code == 400 and late.json["rc"] == "AbortedGen"  # cancelled: nothing charged for it
    with runtime.db.read() as session:
        row = session.get(User, user.id)
        assert row.deleted_at is not None and row.kudos == 500  # the balance frozen as it was
        entries_after = session.scalar(
            select(func.count()).select_from(KudosEntry).where(KudosEntry.user_id == user.id)
        )
        assert entries_after == entries_before
        assert session.scalar(select(func.count()).select_from(SharedKey).where(SharedKey.user_id == user.id)) == 0
        assert (
            session.scalar(
                select(func.count()).select_from(Worker).where(Worker.owner_id == user.id, Worker.deleted_at.is_(None))
            )
            == 0
        )
    assert get_user(client, None, user.id).status_code == 404
    names = [listed["username"] for listed in client.get("/api/v2/users").json]
    assert f"{user.username}#{user.id}" not in names
    _, sender_key = make_user(kudos=10)
    gift = client.post(
        "/api/v2/kudos/transfer", json={"username": f"x#{user.id}", "amount": 1}, headers={"apikey": sender_key}
    )
    assert gift.json["rc"] == "InvalidTargetUsername"
    assert delete_user(client, key, user.id).status_code == 401  # its key is gone


def test_who_may_delete_whom(client, make_user, runtime):
    user, _ = make_user()
    _, other_key = make_user()
    moderator, moderator_key = with_role(runtime, make_user, "moderator")
    _, admin_key = with_role(runtime, make_user, "admin")
    assert delete_user(client, other_key, user.id).json["rc"] == "NotAdmin"
    assert delete_user(client, moderator_key, user.id).json["rc"] == "NotAdmin"  # the issue: the user or an admin
    assert delete_user(client, None, user.id).json["rc"] == "AnonForbiddenUser"
    assert delete_user(client, admin_key, 0).json["rc"] == "AnonForbiddenUser"
    assert delete_user(client, admin_key, moderator.id).json["rc"] == "CannotDeleteMod"
    assert delete_user(client, moderator_key, moderator.id).json["rc"] == "CannotDeleteMod"
    assert delete_user(client, admin_key, 999_999).json["rc"] == "UserNotFound"
    assert delete_user(client, admin_key, user.id).status_code == 200
    seen = get_user(client, moderator_key, user.id)
    assert seen.status_code == 200 and seen.json["deleted"] is True  # a moderator still finds it
    assert put_user(client, moderator_key, user.id, trusted=True).json["rc"] == "UserNotFound"
