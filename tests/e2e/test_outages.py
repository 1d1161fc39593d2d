"""Outages with real server processes: the database behind a proxy that drops, Redis that comes and goes.

The machine's PostgreSQL and Redis are never touched: the servers reach the
database through tests/support/tcp_proxy.py, and Redis is a throwaway
redis-server on a free port (tests/support/redis_server.py).
"""

from __future__ import annotations

import json
import threading
import uuid

import openai
import pytest
import requests

from horde.chat.models import ChatRequest
from tests.support import redis_server
from tests.support.harness import Harness, unique_model
from tests.support.processes import wait_until
from tests.support.redis_server import RedisServer
from tests.support.requests_by_model import request_ids_for_model
from tests.support.tcp_proxy import proxy_database

OUTAGE_DEADLINE_S = 30.0


@pytest.fixture
def postgres_url(e2e_database_url):
    if not e2e_database_url.startswith("postgresql"):
        pytest.skip("a database outage is played on PostgreSQL, through a TCP proxy")
    return e2e_database_url


@pytest.fixture
def proxied_horde(postgres_url):
    """One server that reaches PostgreSQL through a proxy; the test itself reaches it directly."""
    proxy, server_url = proxy_database(postgres_url)
    harness = Harness(postgres_url, server_database_url=server_url)
    yield harness, proxy
    harness.close()
    proxy.close()


def test_database_outage_answers_503_ends_streams_and_recovers(proxied_horde):
    horde, proxy = proxied_horde
    model = unique_model("outage")
    key = horde.user(kudos=100, trusted=True)
    _declare_worker(horde, key, model)
    body = {"model": model, "messages": [{"role": "user", "content": "hello"}]}

    stream = _post(horde, dict(body, stream=True), key, stream=True)
    assert stream.status_code == 200, stream.text
    lines = stream.iter_lines(decode_unicode=True)
    assert next(lines).startswith(": horde queue_position=")  # queued: the stream is open and waiting
    waiting = {}
    thread = threading.Thread(target=lambda: waiting.setdefault("response", _post(horde, body, key)))
    thread.start()
    queued = wait_until(
        lambda: len(_request_ids(horde, model)) == 2 and _request_ids(horde, model), what="both requests queued"
    )

    proxy.cut()

    payloads, done = _rest_of_stream(lines)
    assert done, "the stream ends with [DONE], not a cut connection"
    assert payloads[-1]["error"]["code"] == "service_unavailable"
    assert payloads[-1]["error"]["type"] == "api_error"
    assert payloads[-1]["error"]["metadata"]["request_id"] in queued
    thread.join(OUTAGE_DEADLINE_S)
    held = waiting["response"]
    assert held.status_code == 503
    assert held.json()["error"]["code"] == "service_unavailable"
    assert held.json()["error"]["metadata"]["request_id"] in queued
    assert held.headers["Retry-After"] == "5"
    assert held.headers["x-should-retry"] == "false"  # the Horde holds the queued request

    client = horde.openai(key)
    with pytest.raises(openai.InternalServerError) as refused:
        client.chat.completions.create(**body)
    assert refused.value.status_code == 503 and refused.value.code == "service_unavailable"
    assert refused.value.response.headers["retry-after"] == "5"
    assert refused.value.response.headers.get("x-should-retry") != "false"  # nothing was queued: retry is safe
    models = requests.get(horde.url + "/v1/models", headers={"Authorization": f"Bearer {key}"}, timeout=10)
    assert models.status_code == 503 and models.json()["error"]["code"] == "service_unavailable"
    native = requests.post(
        horde.url + "/api/v2/generate/chat/async",
        headers={"apikey": key},
        timeout=10,
        json={"models": [model], "messages": [{"role": "user", "content": "hello"}]},
    )
    assert native.status_code == 503 and native.headers["Retry-After"] == "5"
    assert native.json()["rc"] == "service_unavailable" and native.json()["message"]
    pop = requests.post(
        horde.url + "/api/v2/generate/chat/pop", headers={"apikey": key}, timeout=10, json=_pop_body(model)
    )
    assert pop.status_code == 503 and pop.json()["rc"] == "service_unavailable"
    assert requests.get(horde.url + "/health", timeout=10).json() == {"status": "ok"}
    ready = requests.get(horde.url + "/ready", timeout=10)
    assert ready.status_code == 503
    assert ready.json()["database"] == "unreachable" and ready.json()["down"] == ["database"]

    proxy.resume()

    wait_until(
        lambda: requests.get(horde.url + "/ready", timeout=10).status_code == 200,
        OUTAGE_DEADLINE_S,
        "the server to reach the database again",
    )
    # The two callers got their 503: their holders are released once the database is back, and after the drop
    # grace the requests nobody holds any more are cancelled, as for a dropped connection.
    wait_until(
        lambda: {_request(horde, request_id).state for request_id in queued} == {"cancelled"},
        OUTAGE_DEADLINE_S,
        "the abandoned requests to be cancelled",
    )
    horde.worker([model])
    reply = client.chat.completions.create(model=model, messages=[{"role": "user", "content": "after the outage"}])
    assert reply.choices[0].message.content == "You wrote: after the outage"


@pytest.fixture
def redis_down_hordes(postgres_url):
    """Two server processes on one database, configured with a Redis that is not running yet."""
    if not redis_server.available():
        pytest.skip("redis-server is not installed")
    redis = RedisServer()
    harness = Harness(
        postgres_url,
        {"HORDE_REDIS_URL": redis.url, "HORDE_REDIS_PREFIX": f"horde_test_{uuid.uuid4().hex[:12]}"},
        servers=2,
    )
    yield harness, redis
    harness.close()
    redis.kill()


def test_without_redis_two_processes_serve_and_reconnect(redis_down_hordes):
    horde, redis = redis_down_hordes
    model = unique_model("redis")
    front, back = horde.servers
    for server in horde.servers:
        assert _ready(server) == (200, "unreachable")
    horde.worker([model], server=back)  # long-polls the process the client does not call
    key = horde.user()
    client = horde.openai(key, server=front, timeout=OUTAGE_DEADLINE_S)

    assert _ask(client, model, "no Redis at start") == "You wrote: no Redis at start"

    redis.start()
    wait_until(
        lambda: all(_ready(server) == (200, "ok") for server in horde.servers),
        OUTAGE_DEADLINE_S,
        "both processes to subscribe to Redis",
    )
    assert _ask(client, model, "Redis is back") == "You wrote: Redis is back"

    redis.kill()
    wait_until(
        lambda: all(_ready(server) == (200, "unreachable") for server in horde.servers),
        OUTAGE_DEADLINE_S,
        "both processes to notice that Redis is gone",
    )
    streamed = client.chat.completions.create(
        model=model, stream=True, messages=[{"role": "user", "content": "Redis is gone"}]
    )
    assert "".join(chunk.choices[0].delta.content or "" for chunk in streamed if chunk.choices) == (
        "You wrote: Redis is gone"
    )


def _ask(client, model: str, text: str) -> str:
    reply = client.chat.completions.create(model=model, messages=[{"role": "user", "content": text}])
    return reply.choices[0].message.content


def _ready(server) -> tuple[int, str]:
    response = requests.get(server.url + "/ready", timeout=10)
    body = response.json()
    assert body["database"] == "ok"
    assert ("redis" in body["down"]) == (body["redis"] == "unreachable")
    return response.status_code, body["redis"]


def _post(horde, body, key, stream=False):
    return requests.post(
        horde.url + "/v1/chat/completions",
        json=body,
        stream=stream,
        headers={"Authorization": f"Bearer {key}"},
        timeout=OUTAGE_DEADLINE_S,
    )


def _rest_of_stream(lines) -> tuple[list[dict], bool]:
    payloads = []
    for line in lines:
        if line == "data: [DONE]":
            return payloads, True
        if line.startswith("data: "):
            payloads.append(json.loads(line[len("data: ") :]))
    return payloads, False


def _pop_body(model: str) -> dict:
    return {"name": f"hand-{model}", "models": [model], "max_length": 512, "max_context_length": 4096}


def _declare_worker(horde, key: str, model: str) -> None:
    """An online worker for the model that takes no job: requests stay queued."""
    response = requests.post(
        horde.url + "/api/v2/generate/chat/pop", headers={"apikey": key}, timeout=10, json=_pop_body(model)
    )
    assert response.status_code == 200 and response.json()["id"] is None, response.text


def _request_ids(horde, model: str) -> set[str]:
    return set(request_ids_for_model(horde.runtime.db, model))


def _request(horde, request_id: str) -> ChatRequest:
    with horde.runtime.db.read() as session:
        return session.get(ChatRequest, request_id)
