"""A client's Client-Agent is recorded with its chat and text requests and counted on /metrics by its name."""

from __future__ import annotations

import uuid

from horde.chat.models import ChatRequest
from horde.text.models import TextRequest
from tests.integration.ops.conftest import buffered_client
from tests.integration.ops.test_metrics import samples, value
from tests.support.native import pop
from tests.support.text_api import text_pop


def test_text_and_chat_requests_keep_their_client_agent_and_are_counted_by_its_name(app, runtime, make_user):
    client = buffered_client(app)
    _, owner = make_user()
    _, key = make_user(kudos=1000)
    text_pop(client, owner)
    pop(client, owner)
    lite, tavern = f"Lite{uuid.uuid4().hex[:6]}", f"Tavern{uuid.uuid4().hex[:6]}"
    text_ids = [
        client.post(
            "/api/v2/generate/text/async",
            json={"prompt": "Once", "models": ["m1"]},
            headers={"apikey": key, "Client-Agent": agent},
        ).json["id"]
        for agent in (f"{lite}:17", f"{lite}:18:someone@example.com")
    ]
    chat_id = client.post(
        "/api/v2/generate/chat/async",
        json={"model": "m1", "messages": [{"role": "user", "content": "Hi"}]},
        headers={"apikey": key, "Client-Agent": f"{tavern}:1.12.0:Cohee#1207"},
    ).json["id"]
    anonymous = client.post("/api/v2/generate/text/async", json={"prompt": "Hi", "models": ["m1"]})
    assert anonymous.status_code == 202
    client.post(  # refused: nothing queued, nothing counted
        "/api/v2/generate/text/async",
        json={"prompt": "Hi", "models": ["m1"], "params": {"n": 99}},
        headers={"apikey": key, "Client-Agent": f"{tavern}:1:x"},
    )

    metrics = samples(client)
    assert value(metrics, "horde_client_requests_total", client=lite, endpoint="text") == 2
    assert value(metrics, "horde_client_requests_total", client=tavern, endpoint="chat") == 1
    assert value(metrics, "horde_client_requests_total", client=tavern, endpoint="text") == 0
    assert value(metrics, "horde_client_requests_total", client="unknown", endpoint="text") >= 1
    with runtime.db.read() as session:
        assert [session.get(TextRequest, request_id).client_agent for request_id in text_ids] == [
            f"{lite}:17",
            f"{lite}:18:someone@example.com",
        ]
        assert session.get(ChatRequest, chat_id).client_agent == f"{tavern}:1.12.0:Cohee#1207"
