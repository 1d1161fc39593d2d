"""Size limits on both APIs: messages, body bytes, image bytes; refused before anything is queued."""

from __future__ import annotations

import base64
import json

import pytest

from horde.chat.models import ChatRequest
from tests.integration.helpers import ALL_FEATURES, pop, queue
from tests.support.image_server import PNG, running_image_server


def data_url(size: int) -> str:
    return "data:image/png;base64," + base64.b64encode(PNG + b"\0" * (size - len(PNG))).decode()


def queued(runtime) -> int:
    with runtime.db.read() as session:
        return session.query(ChatRequest).count()


@pytest.fixture
def image_server():
    with running_image_server() as server:
        yield server.url


@pytest.fixture
def owner(client, make_user):
    _, key = make_user("owner")
    pop(client, key, features=ALL_FEATURES, max_context_length=1_000_000)
    return key


def front(client, key, **body):
    body.setdefault("model", "m1")
    body.setdefault("messages", [{"role": "user", "content": "Hello"}])
    return client.post("/v1/chat/completions", json=body, headers={"Authorization": f"Bearer {key}"})


def many_messages(count):
    turns = [{"role": "user" if index % 2 == 0 else "assistant", "content": f"m{index}"} for index in range(count - 1)]
    return turns + [{"role": "user", "content": "last"}]


def test_more_messages_than_the_limit_are_refused_on_both_apis(client, owner, runtime):
    runtime.settings = runtime.settings.replace(max_messages=10)
    native = queue(client, owner, messages=many_messages(11))
    assert (native.status_code, native.json["rc"]) == (400, "UnsupportedChatParameter")
    assert native.json["param"] == "messages"
    assert native.json["metadata"]["max_messages"] == 10
    oai = front(client, owner, messages=many_messages(11))
    error = oai.json["error"]
    assert (oai.status_code, error["code"], error["param"], error["type"]) == (
        400,
        "UnsupportedChatParameter",
        "messages",
        "invalid_request_error",
    )
    assert queued(runtime) == 0
    assert queue(client, owner, messages=many_messages(10)).status_code == 202


def test_the_default_message_limit_is_2048(client, owner, runtime):
    assert runtime.settings.max_messages == 2048
    assert queue(client, owner, messages=many_messages(2049)).json["param"] == "messages"
    assert queue(client, owner, messages=many_messages(2048)).status_code == 202


def test_a_body_above_the_limit_is_413_on_both_apis(client, owner, runtime):
    runtime.settings = runtime.settings.replace(max_body_bytes=2000)
    big = [{"role": "user", "content": "x" * 3000}]
    native = queue(client, owner, messages=big)
    assert (native.status_code, native.json["rc"]) == (413, "request_too_large")
    assert native.headers["Connection"] == "close"
    oai = front(client, owner, messages=big)
    assert (oai.status_code, oai.json["error"]["code"], oai.json["error"]["type"]) == (
        413,
        "request_too_large",
        "invalid_request_error",
    )
    unknown = client.post("/v1/nowhere", data=json.dumps(big), headers={"Content-Type": "application/json"})
    assert (unknown.status_code, unknown.json["error"]["code"]) == (413, "request_too_large")
    pop_body = client.post("/api/v2/generate/chat/pop", data="x" * 2001, headers={"apikey": owner})
    assert (pop_body.status_code, pop_body.json["rc"]) == (413, "request_too_large")
    assert queued(runtime) == 0
    assert queue(client, owner, messages=[{"role": "user", "content": "x" * 1000}]).status_code == 202


@pytest.mark.parametrize("api", ["native", "front"])
def test_images_together_above_the_total_are_refused_at_the_part_that_crosses_it(client, owner, runtime, api):
    runtime.settings = runtime.settings.replace(max_image_bytes_total=2500, image_max_bytes=2000)
    parts = [{"type": "text", "text": "look"}] + [
        {"type": "image_url", "image_url": {"url": data_url(1000)}} for _ in range(3)
    ]
    messages = [
        {"role": "user", "content": parts[:2]},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": [parts[0], *parts[2:]]},
    ]
    if api == "native":
        response = queue(client, owner, messages=messages)
        error = response.json
        code = error["rc"]
    else:
        response = front(client, owner, messages=messages)
        error = response.json["error"]
        code = error["code"]
    assert (response.status_code, code, error["param"]) == (400, "UnsupportedChatParameter", "messages[2].content[2]")
    assert error["metadata"]["max_image_bytes_total"] == 2500
    assert queued(runtime) == 0
    assert queue(client, owner, messages=messages[:1]).status_code == 202


def test_one_image_above_its_own_cap_is_still_image_too_large(client, owner, runtime):
    runtime.settings = runtime.settings.replace(max_image_bytes_total=10_000, image_max_bytes=500)
    response = queue(
        client,
        owner,
        messages=[{"role": "user", "content": [{"type": "image_url", "image_url": {"url": data_url(1000)}}]}],
    )
    assert (response.status_code, response.json["rc"]) == (413, "ImageTooLarge")


def test_fetched_images_count_toward_the_total(client, owner, runtime, image_server):
    runtime.settings = runtime.settings.replace(max_image_bytes_total=len(PNG) + 10)
    inline = {"type": "image_url", "image_url": {"url": data_url(len(PNG))}}
    fetched = {"type": "image_url", "image_url": {"url": image_server + "/pixel.png"}}
    response = queue(client, owner, messages=[{"role": "user", "content": [inline, fetched]}])
    assert (response.status_code, response.json["rc"], response.json["param"]) == (
        400,
        "UnsupportedChatParameter",
        "messages[0].content[1]",
    )
    assert queue(client, owner, messages=[{"role": "user", "content": [fetched]}]).status_code == 202


def test_a_ten_thousand_message_body_is_admitted_with_linear_fitting(client, owner, runtime, monkeypatch):
    """The issue's body: 10,000 short messages, truncated to fit; each message is estimated once."""
    from horde.chat import tokens

    runtime.settings = runtime.settings.replace(max_messages=20_000, max_body_bytes=10_000_000)
    pop(client, owner, features=ALL_FEATURES, max_context_length=8192)
    calls = []
    estimate = tokens.message_tokens
    monkeypatch.setattr(tokens, "message_tokens", lambda message: calls.append(1) or estimate(message))
    response = queue(client, owner, messages=many_messages(10_000))
    assert response.status_code == 202, response.json
    with runtime.db.read() as session:
        request = session.get(ChatRequest, response.json["id"])
        assert request.context_adjustments[-1]["reason"] == "truncate_oldest"
    assert len(calls) <= 2 * 10_000  # admission and pricing; a quadratic fit makes tens of millions
