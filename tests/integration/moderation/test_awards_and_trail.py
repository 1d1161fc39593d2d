"""Kudos awards (one ledger entry each), and the audit trail: every moderator's action recorded with its change,
in its transaction, append-only, read a page at a time."""

from __future__ import annotations

import pytest
from sqlalchemy import select, text, update
from sqlalchemy.exc import DBAPIError

from horde.accounts.models import KudosEntry, User
from horde.accounts.moves import Kind
from horde.accounts.service import move_kudos
from horde.oversight.models import AuditEntry
from tests.support.moderation import audit, delete_user, headers, put_user, set_modes, time_out, with_role
from tests.support.text_api import find_user, text_pop


def award(client, key, username, amount=None):
    body = {"username": username} | ({} if amount is None else {"amount": amount})
    return client.post("/api/v2/kudos/award", json=body, headers=headers(key))


def test_an_award_is_one_ledger_entry_naming_the_moderator(client, make_user, runtime):
    moderator, moderator_key = with_role(runtime, make_user, "moderator")
    user, key = make_user()
    assert award(client, moderator_key, f"{user.username}#{user.id}").json == {"awarded": 100.0}  # the default
    assert award(client, moderator_key, f"x#{user.id}", 25).json == {"awarded": 25.0}
    details = find_user(client, key)
    assert details["kudos"] == 125.0 and details["kudos_details"]["awarded"] == 125.0
    with runtime.db.read() as session:
        entries = session.execute(
            select(KudosEntry.amount, KudosEntry.kind, KudosEntry.counterpart_id).where(KudosEntry.user_id == user.id)
        ).all()
    assert sorted(entries) == [(25, "awarded", moderator.id), (100, "awarded", moderator.id)]


def test_award_refusals(client, make_user, runtime):
    _, moderator_key = with_role(runtime, make_user, "moderator")
    user, key = make_user()
    flagged, _ = make_user()
    assert put_user(client, moderator_key, flagged.id, flagged=True).status_code == 200
    for caller, name, amount, status, rc in (
        (key, f"x#{user.id}", 5, 403, "NotAllowedAwards"),
        (None, f"x#{user.id}", 5, 403, "NotAllowedAwards"),
        (moderator_key, "nobody#999999", 5, 400, "InvalidAwardUsername"),
        (moderator_key, "Anonymous#0", 5, 400, "KudosAwardToAnon"),
        (moderator_key, f"x#{flagged.id}", 5, 400, "TargetAccountFlagged"),
        (moderator_key, f"x#{user.id}", 0, 400, "BadRequest"),
        (moderator_key, f"x#{user.id}", -5, 400, "BadRequest"),
    ):
        answer = award(client, caller, name, amount)
        assert (answer.status_code, answer.json["rc"]) == (status, rc), (name, amount)
    assert find_user(client, key)["kudos"] == 0.0


def test_every_moderators_action_is_in_the_trail_with_its_change(client, make_user, runtime):
    moderator, moderator_key = with_role(runtime, make_user, "moderator")
    admin, admin_key = with_role(runtime, make_user, "admin")
    user, user_key = make_user()
    text_pop(client, user_key, "trail-worker", models=["trail-model"])
    worker_id = client.get("/api/v2/workers/name/trail-worker").json["id"]
    put_user(client, moderator_key, user.id, worker_invited=2, concurrency=4, reason="garbage replies")
    award(client, moderator_key, f"x#{user.id}", 7)
    time_out(client, moderator_key, "192.0.2.0/24", hours=3, reason="flood")
    set_modes(client, admin_key, invite_only_mode=True)
    client.put(f"/api/v2/workers/{worker_id}", json={"paused": True, "reason": "slow"}, headers=headers(moderator_key))
    client.put(f"/api/v2/workers/{worker_id}", json={"info": "mine"}, headers=headers(user_key))  # the owner's: none
    delete_user(client, admin_key, user.id)

    entries = audit(client, moderator_key)["entries"]
    actions = [(entry["action"], entry["target_kind"], entry["actor"]) for entry in entries]
    assert actions == [
        ("delete_user", "user", f"{admin.username}#{admin.id}"),
        ("modify_worker", "worker", f"{moderator.username}#{moderator.id}"),
        ("set_modes", "modes", f"{admin.username}#{admin.id}"),
        ("time_out_address", "address", f"{moderator.username}#{moderator.id}"),
        ("award_kudos", "user", f"{moderator.username}#{moderator.id}"),
        ("modify_user", "user", f"{moderator.username}#{moderator.id}"),
    ]
    modified = entries[-1]
    assert modified["target"] == str(user.id) and modified["reason"] == "garbage replies"
    assert modified["before"] == {"worker_invited": 0, "concurrency": 30}
    assert modified["after"] == {"worker_invited": 2, "concurrency": 4}
    assert entries[-2]["after"] == {"kudos": 7, "awarded": 7} and entries[-2]["before"] == {"kudos": 0}
    assert entries[-3]["target"] == "192.0.2.0/24" and entries[-3]["reason"] == "flood"
    assert entries[-4]["before"] == {"invite_only_mode": False} and entries[-4]["after"] == {"invite_only_mode": True}
    assert entries[-5]["after"] == {"paused": True} and entries[-5]["target"] == worker_id
    assert entries[0]["before"]["workers"] == [worker_id] and entries[0]["actor_id"] == admin.id

    of_user = audit(client, moderator_key, target_kind="user", target=str(user.id))["entries"]
    assert [entry["action"] for entry in of_user] == ["delete_user", "award_kudos", "modify_user"]
    by_admin = audit(client, moderator_key, actor_id=admin.id)["entries"]
    assert [entry["action"] for entry in by_admin] == ["delete_user", "set_modes"]
    first = audit(client, moderator_key, limit=2)
    assert len(first["entries"]) == 2 and first["next_before"] == first["entries"][-1]["id"]
    rest = audit(client, moderator_key, before=first["next_before"], limit=200)
    assert [entry["id"] for entry in first["entries"] + rest["entries"]] == [entry["id"] for entry in entries]
    assert rest["next_before"] is None


def test_the_trail_is_read_by_moderators_and_bounded(client, make_user, runtime):
    _, key = make_user()
    _, moderator_key = with_role(runtime, make_user, "moderator")
    refused = client.get("/api/v2/operations/audit", headers=headers(key))
    assert (refused.status_code, refused.json["rc"]) == (403, "NotModerator")
    assert client.get("/api/v2/operations/audit").json["rc"] == "NotModerator"
    for query in ({"limit": "x"}, {"before": "-1"}, {"actor_id": "9" * 30}, {"target": "t" * 161}):
        answer = client.get("/api/v2/operations/audit", query_string=query, headers=headers(moderator_key))
        assert answer.status_code == 400 and answer.json["param"] == next(iter(query)), query
    assert audit(client, moderator_key, limit=100_000)["entries"] == []


def test_an_entry_cannot_be_changed_nor_deleted(client, make_user, runtime):
    _, moderator_key = with_role(runtime, make_user, "moderator")
    user, _ = make_user()
    put_user(client, moderator_key, user.id, trusted=True)
    for statement in (update(AuditEntry).values(reason="rewritten"), text("DELETE FROM audit_entries")):
        with pytest.raises(DBAPIError, match="append-only"), runtime.db.transaction() as session:
            session.execute(statement)
    assert audit(client, moderator_key)["entries"][0]["reason"] is None


def test_a_change_and_its_entry_roll_back_together(client, make_user, runtime):
    _, admin_key = with_role(runtime, make_user, "admin")
    target, _ = make_user()
    with runtime.db.transaction() as session:  # a balance the next adjustment carries past 2**63 - 1
        user = session.get(User, target.id)
        move_kudos(session, user, 2**63 - 10 - user.kudos, kind=Kind.GRANT)
    refused = put_user(client, admin_key, target.id, concurrency=9, kudos=100)  # fails inside the write
    assert (refused.status_code, refused.json["param"]) == (400, "kudos")
    assert audit(client, admin_key)["entries"] == []
    assert client.get(f"/api/v2/users/{target.id}").json["concurrency"] == 30
