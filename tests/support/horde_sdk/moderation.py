"""horde-sdk 0.18.0's moderation calls against a running Horde, run as its own process (the SDK reads AI_HORDE_URL at
import): python -m tests.support.horde_sdk.moderation '{"admin": ..., "moderator": ..., "user": ..., ...}' prints
one JSON object of what each call parsed to.

`ModifyUserRequest` (an admin's and a moderator's changes, refusals), `SingleUserDetailsRequest` with a
moderator's key, the worker requests a moderator sends (`ModifyWorkerRequest` with `paused`, refused to the owner;
`DeleteWorkerRequest`), and a flagged user's `TextGenerateJobPopRequest`. horde-sdk 0.18.0 names
/v2/kudos/award, /v2/status/modes and /v2/operations/ipaddr in its endpoints but has no request models for them:
the scenario calls those paths (`AI_HORDE_API_ENDPOINT_SUBPATH`) with `requests`, and parses the modes with the
SDK's `HordeModes` model.
"""

from __future__ import annotations

import json
import os
import sys

import requests
from horde_sdk.ai_horde_api.ai_horde_clients import AIHordeAPIManualClient
from horde_sdk.ai_horde_api.apimodels import (
    DeleteWorkerRequest,
    DeleteWorkerResponse,
    HordeModes,
    ModifyWorkerRequest,
    ModifyWorkerResponse,
    TextGenerateJobPopRequest,
    TextGenerateJobPopResponse,
)
from horde_sdk.ai_horde_api.apimodels._users import (
    ModifyUserRequest,
    ModifyUserResponse,
    SingleUserDetailsRequest,
    UserDetailsResponse,
)
from horde_sdk.ai_horde_api.endpoints import AI_HORDE_API_ENDPOINT_SUBPATH as PATHS
from horde_sdk.generic_api.apimodels import RequestErrorResponse

HTTP_TIMEOUT_S = 10


def _answer(answer) -> dict:
    """What the SDK parsed: a response's set fields, or an error's rc."""
    if isinstance(answer, RequestErrorResponse):
        return {"rc": answer.rc, "message": answer.message}
    return {"type": type(answer).__name__, **answer.model_dump(exclude_none=True, by_alias=True)}


def _path(template: str, **values: str) -> str:
    base = os.environ["AI_HORDE_URL"].rstrip("/")
    return base + template.format(**values)


def run(args: dict) -> dict:
    client = AIHordeAPIManualClient()
    target = str(args["target_id"])
    result: dict = {}
    result["admin_modifies"] = _answer(
        client.submit_request(
            ModifyUserRequest(
                apikey=args["admin"],
                user_id=target,
                kudos=25.0,
                usage_multiplier=1.5,
                concurrency=12,
                worker_invited=2,
                trusted=True,
                contact="target@example.com",
                admin_comment="checked by the sdk",
                public_workers=True,
            ),
            ModifyUserResponse,
        )
    )
    result["moderator_flags"] = _answer(
        client.submit_request(
            ModifyUserRequest(apikey=args["moderator"], user_id=target, flagged=True), ModifyUserResponse
        )
    )
    result["moderator_sets_kudos"] = _answer(
        client.submit_request(
            ModifyUserRequest(apikey=args["moderator"], user_id=target, kudos=5.0), ModifyUserResponse
        )
    )
    result["user_flags_itself_off"] = _answer(
        client.submit_request(ModifyUserRequest(apikey=args["user"], user_id=target, flagged=False), ModifyUserResponse)
    )
    result["user_sets_contact"] = _answer(
        client.submit_request(
            ModifyUserRequest(apikey=args["user"], user_id=target, contact="me@example.com"), ModifyUserResponse
        )
    )
    result["unsupported"] = _answer(
        client.submit_request(
            ModifyUserRequest(apikey=args["admin"], user_id=target, monthly_kudos=10), ModifyUserResponse
        )
    )
    details = client.submit_request(
        SingleUserDetailsRequest(apikey=args["moderator"], user_id=target), UserDetailsResponse
    )
    result["details"] = (
        _answer(details)
        if isinstance(details, RequestErrorResponse)
        else {
            "type": type(details).__name__,
            "flagged": details.flagged,
            "trusted": details.trusted,
            "concurrency": details.concurrency,
            "worker_invited": details.worker_invited,
            "kudos": details.kudos,
        }
    )
    result["flagged_pop"] = _answer(
        client.submit_request(
            TextGenerateJobPopRequest(
                apikey=args["user"],
                name=args["worker_name"],
                models=[args["model"]],
                max_length=64,
                max_context_length=512,
                bridge_agent="sdk-worker:1:test",
            ),
            TextGenerateJobPopResponse,
        )
    )
    worker_id = args["worker_id"]
    result["owner_pauses"] = _answer(
        client.submit_request(
            ModifyWorkerRequest(apikey=args["user"], worker_id=worker_id, paused=True), ModifyWorkerResponse
        )
    )
    result["moderator_pauses"] = _answer(
        client.submit_request(
            ModifyWorkerRequest(apikey=args["moderator"], worker_id=worker_id, paused=True), ModifyWorkerResponse
        )
    )
    modes_put = requests.put(
        _path(PATHS.v2_status_modes),
        json={"invite_only_mode": True},
        headers={"apikey": args["admin"]},
        timeout=HTTP_TIMEOUT_S,
    )
    modes = requests.get(_path(PATHS.v2_status_modes), headers={"apikey": args["moderator"]}, timeout=HTTP_TIMEOUT_S)
    result["modes"] = HordeModes.model_validate(modes.json()).model_dump() | {"put": modes_put.json()}
    requests.put(
        _path(PATHS.v2_status_modes),
        json={"invite_only_mode": False},
        headers={"apikey": args["admin"]},
        timeout=HTTP_TIMEOUT_S,
    )
    award = requests.post(
        _path(PATHS.v2_kudos_award),
        json={"username": f"x#{args['recipient_id']}", "amount": 40},
        headers={"apikey": args["moderator"]},
        timeout=HTTP_TIMEOUT_S,
    )
    result["award"] = award.json()
    timeout_path = _path(PATHS.v2_operations_ipaddr)
    added = requests.post(
        timeout_path,
        json={"ipaddr": "192.0.2.0/24", "hours": 2},
        headers={"apikey": args["moderator"]},
        timeout=HTTP_TIMEOUT_S,
    )
    single = requests.get(
        _path(PATHS.v2_operations_ipaddr_single, ipaddr="192.0.2.9"),
        headers={"apikey": args["moderator"]},
        timeout=HTTP_TIMEOUT_S,
    )
    lifted = requests.delete(
        timeout_path, json={"ipaddr": "192.0.2.0/24"}, headers={"apikey": args["moderator"]}, timeout=HTTP_TIMEOUT_S
    )
    result["timeouts"] = {"added": added.json(), "matching": single.json(), "lifted": lifted.json()}
    result["moderator_deletes_worker"] = _answer(
        client.submit_request(DeleteWorkerRequest(apikey=args["moderator"], worker_id=worker_id), DeleteWorkerResponse)
    )
    return result


if __name__ == "__main__":
    print(json.dumps(run(json.loads(sys.argv[1])), default=str))
