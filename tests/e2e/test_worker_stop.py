"""A worker that stops, or whose connection dies, takes no job with it: an idle reference worker stops at once
(not after its long-poll's `--wait`), and a long-poll whose connection closed does not claim the job it is woken
for (horde/http/client_connection.py), so the job goes to a worker that is listening instead of waiting out its ttl."""

from __future__ import annotations

import json
import socket
import uuid

import pytest
import requests

from tests.e2e.test_text_worker import queue_text
from tests.support.harness import unique_model
from tests.support.processes import wait_until

LONG_WAIT_S = 20
#: Well below LONG_WAIT_S: a stop that waited for the idle long-poll is killed at this deadline, not clean.
STOP_DEADLINE_S = 6


@pytest.mark.parametrize("kinds", ["text", "chat", "chat,text"])
def test_an_idle_worker_stops_at_once_not_after_its_long_poll(horde, kinds):
    worker = horde.worker([unique_model("stop")], "--kinds", kinds, "--wait", str(LONG_WAIT_S))
    horde.workers.remove(worker)
    assert worker.stop(timeout_s=STOP_DEADLINE_S) == 0, worker.output()


def _dead_long_poll(horde, path: str, body: dict, key: str) -> socket.socket:
    """Send a long-poll on a raw connection and close it once the server has checked the worker in."""
    payload = json.dumps(body).encode()
    connection = socket.create_connection(("127.0.0.1", horde.server.port))
    connection.sendall(
        f"POST {path} HTTP/1.1\r\nHost: horde\r\nContent-Type: application/json\r\napikey: {key}\r\n"
        f"Content-Length: {len(payload)}\r\n\r\n".encode()
        + payload
    )
    return connection


def _listed(horde, kind: str, name: str) -> bool:
    listed = requests.get(horde.url + f"/api/v2/workers?type={kind}", timeout=5).json()
    return any(item["name"] == name for item in listed)


@pytest.mark.parametrize("kind", ["chat", "text"])
def test_a_long_poll_whose_connection_closed_claims_nothing(horde, kind):
    model, owner = unique_model("dead-poll"), horde.user(trusted=True)
    dead_name = f"dead-{uuid.uuid4().hex[:8]}"
    if kind == "chat":
        path = "/api/v2/generate/chat/pop"
        body = {"name": dead_name, "models": [model], "max_length": 512, "max_context_length": 4096, "wait": 20}
    else:
        path = "/api/v2/generate/text/pop"
        body = {"name": dead_name, "models": [model], "max_length": 512, "max_context_length": 4096, "wait": 20}
    connection = _dead_long_poll(horde, path, body, owner)
    # The first look checked the new worker in (and found nothing) in one transaction: it is waiting now.
    wait_until(lambda: _listed(horde, kind, dead_name), what="the long-polling worker to be checked in")
    connection.close()

    key = horde.user(kudos=100)
    if kind == "chat":
        answer = requests.post(
            horde.url + "/api/v2/generate/chat/async",
            headers={"apikey": key},
            json={"model": model, "messages": [{"role": "user", "content": "Hello"}], "max_tokens": 32},
            timeout=10,
        )
        assert answer.status_code == 202, answer.text
    else:
        queue_text(horde, key, {"prompt": "Hello", "models": [model], "params": {"max_length": 32}})

    live = requests.post(
        horde.url + path, headers={"apikey": owner}, json={**body, "name": f"live-{uuid.uuid4().hex[:8]}", "wait": 5}
    ).json()
    assert live["id"] is not None, f"the job went to the closed long-poll: {live}"
