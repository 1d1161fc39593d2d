"""horde-sdk 0.18.0's account calls against a running Horde, run as its own process (the SDK reads AI_HORDE_URL at
import): python -m tests.support.horde_sdk.accounts '{"key": ..., "recipient_key": ..., ...}' prints one JSON object.

Each call goes through the SDK's manual client and its request and response models: `FindUserRequest`,
`ListUsersDetailsRequest`, `SingleUserDetailsRequest`, `KudosTransferRequest` (a transfer, and a refused one),
and `TextGenerateAsyncRequest` paid with a shared key. horde-sdk 0.18.0 has no request model for /sharedkeys, so
the key is made with its endpoint path (`AI_HORDE_API_ENDPOINT_SUBPATH.v2_sharedkeys_create`) over requests.
For each parsed answer the scenario also names the keys of the JSON that the SDK's model does not declare.
"""

from __future__ import annotations

import json
import os
import sys

import requests
from horde_sdk.ai_horde_api.ai_horde_clients import AIHordeAPIManualClient
from horde_sdk.ai_horde_api.apimodels import FindUserRequest, TextGenerateAsyncRequest, TextGenerateAsyncResponse
from horde_sdk.ai_horde_api.apimodels._kudos import KudosTransferRequest, KudosTransferResponse
from horde_sdk.ai_horde_api.apimodels._users import (
    ListUsersDetailsRequest,
    ListUsersDetailsResponse,
    SingleUserDetailsRequest,
    UserDetailsResponse,
)
from horde_sdk.ai_horde_api.apimodels.generate.text._async import ModelGenerationInputKobold
from horde_sdk.ai_horde_api.endpoints import AI_HORDE_API_ENDPOINT_SUBPATH
from horde_sdk.generic_api.apimodels import RequestErrorResponse

HTTP_TIMEOUT_S = 10


def _undeclared(model: type, body: dict) -> list[str]:
    """The keys of `body` that `model` (a pydantic model) declares no field or alias for."""
    known = {field.alias or name for name, field in model.model_fields.items()} | set(model.model_fields)
    return sorted(set(body) - known)


def _user(answer) -> dict:
    if isinstance(answer, RequestErrorResponse):
        return {"error": answer.message, "rc": answer.rc}
    return {
        "type": type(answer).__name__,
        "username": answer.username,
        "id": answer.id_,
        "kudos": answer.kudos,
        "worker_ids": answer.worker_ids,
        "sharedkey_ids": answer.sharedkey_ids,
        "kudos_details": answer.kudos_details.model_dump() if answer.kudos_details else None,
        "records_request_text": answer.records.request.text if answer.records and answer.records.request else None,
        "active_text": [str(i) for i in answer.active_generations.text or []] if answer.active_generations else None,
    }


def run(args: dict) -> dict:
    client = AIHordeAPIManualClient()
    base = os.environ["AI_HORDE_URL"].rstrip("/")
    raw = {
        path: requests.get(f"{base}/v2{path}", headers=headers, timeout=HTTP_TIMEOUT_S).json()
        for path, headers in (("/find_user", {"apikey": args["key"]}), ("/users", {}))
    }
    result: dict = {
        "find_user": _user(client.submit_request(FindUserRequest(apikey=args["key"]), UserDetailsResponse)),
        "single": _user(
            client.submit_request(SingleUserDetailsRequest(user_id=str(args["recipient_id"])), UserDetailsResponse)
        ),
        "anonymous": _user(client.submit_request(SingleUserDetailsRequest(user_id="0"), UserDetailsResponse)),
        "undeclared": {
            "find_user": _undeclared(UserDetailsResponse, raw["/find_user"]),
            "active_generations": sorted(set(raw["/find_user"]["active_generations"]) - {"text", "image", "alchemy"}),
        },
    }
    listed = client.submit_request(ListUsersDetailsRequest(page=1), ListUsersDetailsResponse)
    result["users"] = (
        {"error": listed.message}
        if isinstance(listed, RequestErrorResponse)
        else {
            "type": type(listed).__name__,
            "usernames": [user.username for user in listed.root],
            "count": len(raw["/users"]),
        }
    )
    sent = client.submit_request(
        KudosTransferRequest(apikey=args["key"], username=args["recipient"], amount=args["amount"]),
        KudosTransferResponse,
    )
    result["transfer"] = (
        {"error": sent.message, "rc": sent.rc}
        if isinstance(sent, RequestErrorResponse)
        else {"type": type(sent).__name__, "transferred": sent.transferred}
    )
    refused = client.submit_request(
        KudosTransferRequest(apikey=args["key"], username="Anonymous#0", amount=1), KudosTransferResponse
    )
    result["transfer_to_anonymous"] = (
        {"type": type(refused).__name__, "rc": refused.rc}
        if isinstance(refused, RequestErrorResponse)
        else {"type": type(refused).__name__}
    )
    create_path = AI_HORDE_API_ENDPOINT_SUBPATH.v2_sharedkeys_create.value
    shared = requests.post(
        f"{base}{create_path}",
        json={"kudos": args["shared_kudos"], "name": "sdk lent"},
        headers={"apikey": args["key"]},
        timeout=HTTP_TIMEOUT_S,
    ).json()
    result["shared_key"] = shared
    queued = client.submit_request(
        TextGenerateAsyncRequest(
            apikey=shared["id"],
            prompt="Paid with a shared key",
            models=[args["model"]],
            params=ModelGenerationInputKobold(max_length=32),
        ),
        TextGenerateAsyncResponse,
    )
    result["shared_key_request"] = (
        {"error": queued.message, "rc": queued.rc}
        if isinstance(queued, RequestErrorResponse)
        else {"type": type(queued).__name__, "id": str(queued.id_), "kudos": queued.kudos}
    )
    result["find_user_with_shared_key"] = _user(
        client.submit_request(FindUserRequest(apikey=shared["id"]), UserDetailsResponse)
    )
    result["after"] = _user(client.submit_request(FindUserRequest(apikey=args["key"]), UserDetailsResponse))
    return result


if __name__ == "__main__":
    print(json.dumps(run(json.loads(sys.argv[1]))))
