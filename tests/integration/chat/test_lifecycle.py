"""Submit, fault, ttl expiry, attempts, conformance refusals and ownership of a request."""

import time

import pytest

from horde.chat import service
from tests.support.native import ALL_FEATURES, ALL_GUARANTEES, pop, queued_id, status, submit

TOOLS = [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}]


@pytest.fixture
def settings(settings):
    return settings.replace(job_ttl_s=0.3, max_attempts=3)


def test_expired_job_restarts_then_faults_after_the_last_attempt(client, make_user, runtime):
    _, owner = make_user("owner")
    pop(client, owner)
    request_id = queued_id(client, owner)
    for attempt in range(1, 4):
        job = pop(client, owner)
        assert job["id"] is not None
        assert status(client, owner, request_id).json["attempts"] == attempt
        time.sleep(0.35)  # past the job's ttl of 0.3 s
        assert service.sweep(runtime) == 1
    view = status(client, owner, request_id).json
    assert view["state"] == "faulted"
    assert view["faulted"]["rc"] == "ChatJobExpired"
    assert submit(client, owner, job["id"]).json["rc"] == "AbortedGen"


def test_fault_restarts_elsewhere_and_the_last_reason_is_reported(client, make_user):
    _, owner = make_user("owner")
    pop(client, owner)
    request_id = queued_id(client, owner)
    for reason in ("out of memory", "backend down", "could not fit the prompt"):
        job = pop(client, owner)
        response = client.post(
            "/api/v2/generate/chat/fault", json={"id": job["id"], "reason": reason}, headers={"apikey": owner}
        )
        assert response.status_code == 200
    view = status(client, owner, request_id).json
    assert view["state"] == "faulted"
    assert view["faulted"] == {"rc": "ChatWorkerFault", "message": "could not fit the prompt"}


@pytest.mark.parametrize(
    "body, reply, expected",
    [
        ({"response_format": {"type": "json_object"}}, {"content": "not json"}, "has to be JSON"),
        ({"tools": TOOLS, "tool_choice": "required"}, {"content": "no call"}, "has to call a function"),
        (
            {"tools": TOOLS, "tool_choice": {"type": "function", "function": {"name": "lookup"}}},
            {"content": "no call"},
            "forces the function 'lookup'",
        ),
        (
            {"tools": TOOLS},
            {
                "content": None,
                "finish_reason": "tool_calls",
                "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": "{oops"}}],
            },
            "not JSON",
        ),
        (
            {"tools": TOOLS},
            {
                "content": None,
                "finish_reason": "tool_calls",
                "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "unknown", "arguments": "{}"}}],
            },
            "does not define",
        ),
        (
            {
                "response_format": {
                    "type": "json_schema",
                    "json_schema": {
                        "name": "s",
                        "strict": True,
                        "schema": {
                            "type": "object",
                            "properties": {"a": {"type": "integer"}},
                            "required": ["a"],
                            "additionalProperties": False,
                        },
                    },
                }
            },
            {"content": '{"a": "x"}'},
            "does not validate",
        ),
    ],
)
def test_nonconformant_submit_is_refused_and_restarted(client, make_user, body, reply, expected):
    _, owner = make_user("owner")
    declared = dict(features=ALL_FEATURES, guarantees=ALL_GUARANTEES)
    pop(client, owner, **declared)
    request_id = queued_id(client, owner, **body)
    job = pop(client, owner, **declared)
    response = submit(client, owner, job["id"], **reply)
    assert response.status_code == 400
    assert response.json["rc"] == "ChatSubmitNonconformant"
    assert expected in response.json["message"]
    view = status(client, owner, request_id).json
    assert view["state"] == "waiting"
    assert pop(client, owner, **declared)["id"] is not None


def test_duplicate_submit(client, make_user):
    _, owner = make_user("owner")
    pop(client, owner)
    queued_id(client, owner)
    job = pop(client, owner)
    assert submit(client, owner, job["id"]).status_code == 200
    second = submit(client, owner, job["id"])
    assert (second.status_code, second.json["rc"]) == (400, "DuplicateGen")


def test_status_is_private_to_its_owner(client, make_user):
    _, owner = make_user("owner")
    _, other = make_user("other")
    pop(client, owner)
    request_id = queued_id(client, owner)
    response = status(client, other, request_id)
    assert (response.status_code, response.json["rc"]) == (404, "RequestNotFound")
    assert client.delete(f"/api/v2/generate/chat/status/{request_id}", headers={"apikey": other}).status_code == 404
    assert status(client, owner, request_id).json["state"] == "waiting"


def test_cancel_tells_the_worker_to_stop(client, make_user):
    _, owner = make_user("owner")
    pop(client, owner)
    request_id = queued_id(client, owner)
    job = pop(client, owner)
    progress = {"id": job["id"], "content": "partial"}
    assert client.post("/api/v2/generate/chat/progress", json=progress, headers={"apikey": owner}).json == {
        "cancel": False
    }
    assert (
        client.delete(f"/api/v2/generate/chat/status/{request_id}", headers={"apikey": owner}).json["state"]
        == "cancelled"
    )
    assert client.post("/api/v2/generate/chat/progress", json=progress, headers={"apikey": owner}).json == {
        "cancel": True
    }
    assert submit(client, owner, job["id"]).json["rc"] == "AbortedGen"


@pytest.mark.parametrize(
    "path, body, rc, param",
    [
        ("pop", {"name": "w", "models": [], "max_length": 512, "max_context_length": 2048}, "BadRequest", "models"),
        (
            "pop",
            {"name": "w", "models": ["m"], "max_length": 8, "max_context_length": 2048},
            "BadRequest",
            "max_length",
        ),
        (
            "pop",
            {"name": "w", "models": ["m"], "max_length": 512, "max_context_length": 2048, "threads": 99},
            "BadRequest",
            "threads",
        ),
        (
            "pop",
            {"name": "w", "models": ["m"], "max_length": 512, "max_context_length": 2048, "features": ["magic"]},
            "BadRequest",
            "features[0]",
        ),
        (
            "pop",
            {"name": "w", "models": ["m"], "max_length": 512, "max_context_length": 2048, "wait": 31},
            "BadRequest",
            "wait",
        ),
        (
            "pop",
            {"name": "w", "models": ["m"], "max_length": 512, "max_context_length": 2048, "colour": "red"},
            "BadRequest",
            "colour",
        ),
        ("submit", {"id": "x", "finish_reason": "bored"}, "BadRequest", "finish_reason"),
        (
            "submit",
            {"id": "x", "tool_calls": [{"id": "c", "function": {"name": "f"}}]},
            "BadRequest",
            "tool_calls[0].function.arguments",
        ),
        ("submit", {"id": "no-such-job", "content": "x"}, "JobNotFound", None),
        ("progress", {"content": "x"}, "BadRequest", "id"),
        ("fault", {"id": "no-such-job"}, "JobNotFound", None),
    ],
)
def test_bad_worker_payloads_are_refused_with_their_rc(client, make_user, path, body, rc, param):
    _, owner = make_user("owner")
    response = client.post(f"/api/v2/generate/chat/{path}", json=body, headers={"apikey": owner})
    assert response.status_code in (400, 404)
    assert response.json["rc"] == rc
    assert response.json.get("param") == param


def test_anonymous_cannot_run_workers(client):
    response = client.post(
        "/api/v2/generate/chat/pop",
        json={"name": "w", "models": ["m"], "max_length": 512, "max_context_length": 2048},
        headers={"apikey": "0000000000"},
    )
    assert (response.status_code, response.json["rc"]) == (403, "AnonForbiddenWorker")


def test_a_worker_cannot_inflate_its_reward(client, make_user):
    _, owner = make_user("owner")
    _, requester = make_user("requester", kudos=10_000)
    pop(client, owner)
    queued_id(client, requester, max_tokens=100)
    job = pop(client, owner)
    reward = submit(client, owner, job["id"], usage={"completion_tokens": 10**9}).json["reward"]
    assert reward <= 2  # priced as at most max_tokens (100) of an 8B model


def test_native_requests_get_developer_as_system_and_role_checks(client, make_user):
    _, owner = make_user("owner")
    pop(client, owner)
    queued_id(client, owner, messages=[{"role": "developer", "content": "be brief"}, {"role": "user", "content": "hi"}])
    assert pop(client, owner)["payload"]["messages"][0]["role"] == "system"
    bad = client.post(
        "/api/v2/generate/chat/async",
        headers={"apikey": owner},
        json={"model": "m1", "messages": [{"role": "robot", "content": "x"}]},
    )
    assert (bad.status_code, bad.json["rc"], bad.json["param"]) == (400, "BadRequest", "messages[0].role")


def test_a_broken_strict_schema_is_not_held_against_the_reply(client, make_user):
    _, owner = make_user("owner")
    declared = dict(features=ALL_FEATURES, guarantees=ALL_GUARANTEES)
    pop(client, owner, **declared)
    schema = {
        "type": "object",
        "properties": {"a": {"$ref": "#/$defs/missing"}},
        "required": ["a"],
        "additionalProperties": False,
    }
    queued_id(
        client,
        owner,
        response_format={"type": "json_schema", "json_schema": {"name": "s", "strict": True, "schema": schema}},
    )
    job = pop(client, owner, **declared)
    assert submit(client, owner, job["id"], content='{"a": "x"}').status_code == 200
