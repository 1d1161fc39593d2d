"""horde-sdk 0.18.0's account calls against a real server: /find_user, /users, /users/{id}, /kudos/transfer, and a
request paid with a shared key (tests/support/horde_sdk/accounts.py runs them in a process of their own)."""

from __future__ import annotations

import json

import requests

from tests.support.harness import unique_model
from tests.support.horde_sdk import run_sdk_module

HTTP_TIMEOUT_S = 10


def run_scenario(horde, **args) -> dict:
    return run_sdk_module(horde, "tests.support.horde_sdk.accounts", json.dumps(args))


def native(horde, method: str, path: str, key: str | None = None, body: dict | None = None) -> dict:
    headers = {"apikey": key} if key else {}
    answer = requests.request(method, f"{horde.url}/api/v2{path}", json=body, headers=headers, timeout=HTTP_TIMEOUT_S)
    assert answer.status_code < 300, answer.text
    return answer.json()


def test_every_account_call_of_horde_sdk_gets_a_parsed_answer(horde):
    model = unique_model("sdk-accounts")
    key, recipient_key, worker_key = horde.user(kudos=100), horde.user(), horde.user()
    me, recipient = native(horde, "GET", "/find_user", key), native(horde, "GET", "/find_user", recipient_key)
    native(horde, "POST", "/generate/text/pop", worker_key, {"name": f"w-{model[-8:]}", "models": [model]})

    result = run_scenario(
        horde,
        key=key,
        recipient=recipient["username"],
        recipient_id=recipient["id"],
        amount=10.0,
        shared_kudos=40,
        model=model,
    )

    assert result["find_user"]["type"] == "UserDetailsResponse"
    assert (result["find_user"]["username"], result["find_user"]["id"]) == (me["username"], me["id"])
    assert result["find_user"]["kudos"] == 100.0 and result["find_user"]["kudos_details"]["admin"] == 100.0
    assert result["find_user"]["worker_ids"] == [] and result["find_user"]["active_text"] == []
    assert result["undeclared"] == {"find_user": ["deleted"], "active_generations": ["chat"]}  # the SDK allows both
    assert result["single"]["type"] == "UserDetailsResponse" and result["single"]["username"] == recipient["username"]
    assert result["single"]["worker_ids"] is None  # the public view
    assert (result["anonymous"]["username"], result["anonymous"]["id"]) == ("Anonymous#0", 0)
    assert result["users"]["type"] == "ListUsersDetailsResponse"
    assert me["username"] in result["users"]["usernames"] and result["users"]["count"] == len(
        result["users"]["usernames"]
    )
    assert result["transfer"] == {"type": "KudosTransferResponse", "transferred": 10.0}
    assert result["transfer_to_anonymous"] == {"type": "RequestErrorResponse", "rc": "KudosTransferToAnon"}

    shared = result["shared_key"]
    assert (shared["kudos"], shared["utilized"], shared["username"]) == (40, 0, me["username"])
    queued = result["shared_key_request"]
    assert queued["type"] == "TextGenerateAsyncResponse" and queued["kudos"] >= 1
    assert result["find_user_with_shared_key"]["username"] == f"{me['username']} (Shared Key: sdk lent)"
    after = result["after"]
    assert after["kudos"] == 90.0 and after["kudos_details"]["gifted"] == -10.0
    assert after["sharedkey_ids"] == [shared["id"]] and after["active_text"] == [queued["id"]]
    assert native(horde, "GET", "/find_user", recipient_key)["kudos"] == 10.0

    job = native(horde, "POST", "/generate/text/pop", worker_key, {"name": f"w-{model[-8:]}", "models": [model]})
    reward = native(horde, "POST", "/generate/text/submit", worker_key, {"id": job["id"], "generation": "Lent."})
    assert native(horde, "GET", f"/sharedkeys/{shared['id']}")["utilized"] == reward["reward"] >= 1
    assert native(horde, "GET", "/find_user", key)["kudos"] == 90.0 - reward["reward"]
