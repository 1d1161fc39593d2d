"""The text API through the app's HTTP interface."""

from __future__ import annotations


def text_pop(client, key, name="tw1", models=("m1",), **overrides):
    body = {
        "name": name,
        "models": list(models),
        "max_length": 512,
        "max_context_length": 4096,
        "threads": 4,
        "bridge_agent": "test:1:local",
        **overrides,
    }
    answer = client.post("/api/v2/generate/text/pop", json=body, headers={"apikey": key})
    assert answer.status_code == 200, answer.json
    return answer.json


def text_async(client, key, prompt="Once", **body):
    body.setdefault("models", ["m1"])
    return client.post("/api/v2/generate/text/async", json=dict(body, prompt=prompt), headers={"apikey": key})


def text_queued(client, key, prompt="Once", **body) -> str:
    answer = text_async(client, key, prompt, **body)
    assert answer.status_code == 202, answer.json
    return answer.json["id"]


def text_submit(client, key, job_id, generation="A reply.", **body):
    return client.post(
        "/api/v2/generate/text/submit", json=dict(body, id=job_id, generation=generation), headers={"apikey": key}
    )


def text_status(client, request_id):
    answer = client.get(f"/api/v2/generate/text/status/{request_id}")
    assert answer.status_code == 200, answer.json
    return answer.json


def find_user(client, key):
    return client.get("/api/v2/find_user", headers={"apikey": key}).json
