"""horde-sdk 0.18.0's moderation calls against a real server: ModifyUserRequest (an admin's, a moderator's, the
user's own, refusals), a moderator's SingleUserDetailsRequest, ModifyWorkerRequest with `paused`,
DeleteWorkerRequest, a flagged user's TextGenerateJobPopRequest, and the paths it names for the modes, awards and
IP timeouts (tests/support/horde_sdk/moderation.py runs them in a process of their own)."""

from __future__ import annotations

import json
import uuid

import requests

from horde.accounts import roles
from horde.accounts import service as accounts
from tests.support.harness import unique_model
from tests.support.horde_sdk import run_sdk_module

HTTP_TIMEOUT_S = 10


def native(horde, method: str, path: str, key: str | None = None, body: dict | None = None) -> dict:
    headers = {"apikey": key} if key else {}
    answer = requests.request(method, f"{horde.url}/api/v2{path}", json=body, headers=headers, timeout=HTTP_TIMEOUT_S)
    assert answer.status_code < 300, answer.text
    return answer.json()


def with_role(horde, role: str) -> str:
    """A new user of `role`, made before the server ever saw its key (it caches who a key is)."""
    with horde.runtime.db.transaction() as session:
        user, key = accounts.create_user(session, f"{role}-{uuid.uuid4().hex[:8]}")
        roles.set_role(session, user.username, role)
    return key


def test_horde_sdks_moderation_calls_get_parsed_answers(horde):
    admin, moderator = with_role(horde, "admin"), with_role(horde, "moderator")
    user = horde.user(kudos=10)
    target = native(horde, "GET", "/find_user", user)
    recipient = native(horde, "GET", "/find_user", horde.user())
    model, worker_name = unique_model("sdk-moderation"), f"sdk-mod-{unique_model()[-8:]}"
    native(horde, "POST", "/generate/text/pop", user, {"name": worker_name, "models": [model]})
    worker_id = native(horde, "GET", f"/workers/name/{worker_name}")["id"]

    result = run_sdk_module(
        horde,
        "tests.support.horde_sdk.moderation",
        json.dumps(
            {
                "admin": admin,
                "moderator": moderator,
                "user": user,
                "target_id": target["id"],
                "recipient_id": recipient["id"],
                "worker_name": worker_name,
                "worker_id": worker_id,
                "model": model,
            }
        ),
    )

    assert result["admin_modifies"] == {
        "type": "ModifyUserResponse",
        "new_kudos": 35.0,
        "usage_multiplier": 1.5,
        "concurrency": 12,
        "worker_invited": 2,
        "trusted": True,
        "contact": "target@example.com",
        "admin_comment": "checked by the sdk",
        "public_workers": True,
    }
    assert result["moderator_flags"] == {"type": "ModifyUserResponse", "flagged": True}
    assert result["moderator_sets_kudos"]["rc"] == "NotAdmin"
    assert result["user_flags_itself_off"]["rc"] == "NotModerator"
    assert result["user_sets_contact"] == {"type": "ModifyUserResponse", "contact": "me@example.com"}
    assert result["unsupported"]["rc"] == "BadRequest"
    assert result["details"] == {
        "type": "UserDetailsResponse",
        "flagged": True,
        "trusted": True,
        "concurrency": 12,
        "worker_invited": 2,
        "kudos": 35.0,
    }
    assert result["flagged_pop"]["rc"] == "WorkerFlaggedMaintenance"
    assert result["owner_pauses"]["rc"] == "NotModerator"
    assert result["moderator_pauses"] == {"type": "ModifyWorkerResponse", "paused": True}
    modes = result["modes"]
    assert modes["put"] == {"invite_only_mode": True}
    assert (modes["invite_only_mode"], modes["maintenance_mode"], modes["raid_mode"]) == (True, False, False)
    assert native(horde, "GET", "/status/modes") == {"maintenance_mode": False, "invite_only_mode": False}
    assert result["award"] == {"awarded": 40.0}
    assert result["timeouts"]["added"] == {"message": "OK"} == result["timeouts"]["lifted"]
    assert [entry["ipaddr"] for entry in result["timeouts"]["matching"]] == ["192.0.2.0/24"]
    assert result["moderator_deletes_worker"]["type"] == "DeleteWorkerResponse"
    assert result["moderator_deletes_worker"]["deleted_id"] == worker_id
    trail = native(horde, "GET", "/operations/audit", moderator)["entries"]
    assert [entry["action"] for entry in trail[:4]] == [
        "delete_worker",
        "free_address",
        "time_out_address",
        "award_kudos",
    ]
