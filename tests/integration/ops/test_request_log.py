"""One log line per request, with the request id from x-request-id (or made) returned in that header."""

from __future__ import annotations

import json

import pytest

from horde.app import create_app
from horde.observability import request_log
from tests.integration.ops.conftest import buffered_client
from tests.support.native import declaration


@pytest.fixture
def lines(monkeypatch):
    """The lines the observer writes to stderr, one per request."""
    written: list[str] = []
    monkeypatch.setattr(request_log, "write", lambda text: written.append(text.rstrip("\n")))
    return written


def test_a_given_request_id_is_logged_and_returned(client, make_user, lines):
    user, key = make_user()
    response = client.get("/v1/models", headers={"Authorization": f"Bearer {key}", "x-request-id": "trace-42"})
    assert response.headers["x-request-id"] == "trace-42"
    [line] = lines
    fields = dict(part.split("=", 1) for part in line.split(" ")[1:])
    assert fields == {
        "request_id": "trace-42",
        "method": "GET",
        "route": "/v1/models",
        "status": "200",
        "duration_ms": fields["duration_ms"],
        "user": str(user.id),
    }
    assert float(fields["duration_ms"]) >= 0


def test_a_request_without_id_gets_one(client, lines):
    first, second = client.get("/api/v2/status/models"), client.get("/api/v2/status/models")
    made = first.headers["x-request-id"]
    assert len(made) == 32 and made != second.headers["x-request-id"]
    assert f"request_id={made} " in lines[0]
    assert "route=/api/v2/status/models status=200" in lines[0]


def test_an_unusable_request_id_is_replaced(client, lines):
    response = client.get("/health", headers={"x-request-id": "has spaces in it"})
    assert response.headers["x-request-id"] != "has spaces in it"


def test_unknown_paths_are_logged_by_path_under_one_route(client, lines):
    client.get("/v1/nothing-here")
    assert "route=unmatched path=/v1/nothing-here status=404" in lines[0]


def test_json_lines(runtime, make_user, lines):
    runtime.settings = runtime.settings.replace(log_format="json")
    client = buffered_client(create_app(runtime=runtime))
    user, key = make_user()
    _, worker_key = make_user(trusted=True)
    client.post("/api/v2/generate/chat/pop", json=declaration("log-worker"), headers={"apikey": worker_key})
    lines.clear()
    response = client.post(
        "/api/v2/generate/chat/async",
        json={"model": "m1", "messages": [{"role": "user", "content": "Hi"}]},
        headers={"apikey": key, "x-request-id": "json-1"},
    )
    assert response.status_code == 202
    record = json.loads(lines[0])
    assert record["request_id"] == "json-1" and record["chat_request"] == response.json["id"]
    assert record["route"] == "/api/v2/generate/chat/async"
    assert record["method"] == "POST" and record["user"] == user.id and isinstance(record["status"], int)
    assert isinstance(record["duration_ms"], float) and record["time"].endswith("Z")


@pytest.mark.parametrize("repeat", [1, 2], ids=["first", "again"])
def test_a_pop_names_its_worker_even_when_refused(client, make_user, lines, repeat):
    """A worker's pop body is loaded once (payload.RepeatedBodies); its log line names the worker either way,
    and so does the line of a pop refused for its body."""
    _, key = make_user("owner")
    for _ in range(repeat):
        client.post("/api/v2/generate/chat/pop", json=declaration("logged-worker"), headers={"apikey": key})
    client.post("/api/v2/generate/chat/pop", json={"name": "refused-worker"}, headers={"apikey": key})
    assert all("worker=logged-worker" in line for line in lines[:repeat])
    assert "status=400" in lines[-1] and "worker=refused-worker" in lines[-1]
