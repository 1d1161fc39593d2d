"""The reference worker takes its next job from its submit's answer: one call per job where a pop and a submit were."""

from __future__ import annotations

import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families

from tests.support.harness import unique_model
from tests.support.native import declaration
from tests.support.processes import wait_until

pytestmark = pytest.mark.e2e
QUEUED = 5
HTTP_TIMEOUT_S = 10


def answered(url: str, route: str) -> float:
    """The server's count of 200 answers of POST `route`, from its /metrics."""
    response = requests.get(url + "/metrics", timeout=HTTP_TIMEOUT_S)
    assert response.status_code == 200
    wanted = {"route": route, "method": "POST", "status": "200"}
    return sum(
        sample.value
        for family in text_string_to_metric_families(response.text)
        for sample in family.samples
        if sample.name == "horde_http_requests_total" and sample.labels == wanted
    )


def native(horde, method: str, path: str, key: str, body: dict | None = None) -> requests.Response:
    return requests.request(
        method, f"{horde.url}/api/v2{path}", json=body, headers={"apikey": key}, timeout=HTTP_TIMEOUT_S
    )


def test_a_worker_serves_a_queue_with_one_call_per_job(horde):
    """Five requests wait before the worker (one thread) starts: its first pop takes one, and each submit
    brings the next, so the server answers five submits and fewer than five pops."""
    model, owner, requester = unique_model("submitpop"), horde.user(trusted=True), horde.user(kudos=1000)
    name = f"submitpop-{model.rsplit('-', 1)[1]}"
    online = native(horde, "POST", "/generate/chat/pop", owner, declaration(name, models=[model], threads=1))
    assert online.status_code == 200 and online.json()["id"] is None
    body = {"model": model, "messages": [{"role": "user", "content": "Hello"}], "availability_mode": "wait"}
    request_ids = [native(horde, "POST", "/generate/chat/async", requester, body).json()["id"] for _ in range(QUEUED)]
    pops = answered(horde.url, "/api/v2/generate/chat/pop")
    submits = answered(horde.url, "/api/v2/generate/chat/submit")

    horde.worker([model], "--threads", "1", key=owner, name=name)

    def states() -> list[str]:
        return [native(horde, "GET", f"/generate/chat/status/{id_}", requester).json()["state"] for id_ in request_ids]

    wait_until(lambda: states() == ["done"] * QUEUED, what="the worker to serve the queue")
    wait_until(
        lambda: answered(horde.url, "/api/v2/generate/chat/submit") - submits == QUEUED,
        what="the server to count every submit",
    )
    assert answered(horde.url, "/api/v2/generate/chat/pop") - pops < QUEUED
