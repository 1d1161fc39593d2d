"""Native protocol helpers for tests that drive the app through its HTTP interface."""

from __future__ import annotations

from horde.protocol import FEATURES, GUARANTEES

#: As lists, the JSON a pop body carries.
ALL_FEATURES = list(FEATURES)
ALL_GUARANTEES = list(GUARANTEES)


def declaration(name, models=("m1",), **overrides):
    body = {
        "name": name,
        "models": list(models),
        "max_length": 1024,
        "max_context_length": 8192,
        "threads": 4,
        "features": [],
        "guarantees": [],
        "bridge_agent": "test:1:local",
    }
    body.update(overrides)
    return body


def pop(client, key, name="w1", **overrides):
    response = client.post("/api/v2/generate/chat/pop", json=declaration(name, **overrides), headers={"apikey": key})
    assert response.status_code == 200, response.json
    return response.json


def queue(client, key, **body):
    body.setdefault("model", "m1")
    body.setdefault("messages", [{"role": "user", "content": "Hello"}])
    return client.post("/api/v2/generate/chat/async", json=body, headers={"apikey": key})


def queued_id(client, key, **body):
    response = queue(client, key, **body)
    assert response.status_code == 202, response.json
    return response.json["id"]


def submit(client, key, job_id, **body):
    body.setdefault("content", "Hi there")
    return client.post("/api/v2/generate/chat/submit", json=dict(body, id=job_id), headers={"apikey": key})


def status(client, key, request_id):
    return client.get(f"/api/v2/generate/chat/status/{request_id}", headers={"apikey": key})
