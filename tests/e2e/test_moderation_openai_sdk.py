"""The OpenAI Python SDK meets moderation on /v1: an address in timeout is its PermissionDeniedError (403,
TimeoutIP), maintenance its InternalServerError (503, MaintenanceMode) that it does not retry; a moderator lifts
both, and the same client goes on. A real server behind one trusted proxy hop, the client's address in
X-Forwarded-For."""

from __future__ import annotations

import uuid

import httpx
import openai
import pytest
import requests

from horde.accounts import roles
from horde.accounts import service as accounts
from tests.support.harness import Harness, unique_model

CLIENT_ADDRESS = "203.0.113.5"
HTTP_TIMEOUT_S = 10


@pytest.fixture(scope="module")
def horde(e2e_database_url):
    harness = Harness(e2e_database_url, {"HORDE_TRUSTED_PROXY_HOPS": "1"})
    yield harness
    harness.close()


def staff(horde, role: str) -> str:
    with horde.runtime.db.transaction() as session:
        user, key = accounts.create_user(session, f"{role}-{uuid.uuid4().hex[:8]}")
        roles.set_role(session, user.username, role)
    return key


def native(horde, method: str, path: str, key: str, body: dict) -> dict:
    answer = requests.request(
        method, f"{horde.url}/api/v2{path}", json=body, headers={"apikey": key}, timeout=HTTP_TIMEOUT_S
    )
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_the_sdk_meets_a_timeout_and_maintenance_and_goes_on_once_lifted(horde):
    moderator, admin = staff(horde, "moderator"), staff(horde, "admin")
    model = unique_model("sdk-moderation")
    horde.worker([model])
    sent: list[str] = []  # every request the SDK's HTTP client sends, retries included
    http_client = httpx.Client(event_hooks={"request": [lambda request: sent.append(request.url.path)]})
    client = horde.openai(
        horde.user(kudos=100),
        max_retries=2,
        default_headers={"X-Forwarded-For": CLIENT_ADDRESS},
        http_client=http_client,
    )
    messages = [{"role": "user", "content": "Hello"}]
    assert client.chat.completions.create(model=model, messages=messages).choices[0].message.content

    native(horde, "POST", "/operations/ipaddr", moderator, {"ipaddr": CLIENT_ADDRESS, "hours": 1})
    with pytest.raises(openai.PermissionDeniedError) as refused:
        client.chat.completions.create(model=model, messages=messages)
    assert refused.value.status_code == 403 and refused.value.code == "TimeoutIP"
    native(horde, "DELETE", "/operations/ipaddr", moderator, {"ipaddr": CLIENT_ADDRESS})

    native(horde, "PUT", "/status/modes", admin, {"maintenance_mode": True})
    try:
        sent.clear()
        with pytest.raises(openai.InternalServerError) as unavailable:
            client.chat.completions.create(model=model, messages=messages)
        assert unavailable.value.status_code == 503 and unavailable.value.code == "MaintenanceMode"
        assert sent == ["/v1/chat/completions"]  # x-should-retry: false, so the SDK sent it once
    finally:
        native(horde, "PUT", "/status/modes", admin, {"maintenance_mode": False})
    assert client.chat.completions.create(model=model, messages=messages).choices[0].message.content
