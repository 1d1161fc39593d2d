"""Request logs and /metrics from real processes: JSON log lines that follow a chat request to its worker,
and metrics summed across gunicorn's processes."""

from __future__ import annotations

import json

import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families

from tests.support.harness import SHARED_DATABASE_SETTINGS, Harness, unique_model
from tests.support.processes import GunicornServer, wait_until

pytestmark = pytest.mark.e2e
MISSES = 20


def scrape(url: str) -> dict:
    response = requests.get(url + "/metrics", timeout=10)
    assert response.status_code == 200
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(response.text)
        for sample in family.samples
    }


def value(metrics: dict, name: str, **labels) -> float:
    return metrics.get((name, tuple(sorted(labels.items()))), 0.0)


@pytest.fixture(scope="module")
def production(tmp_path_factory):
    """gunicorn with two gevent processes, JSON request logs, a per-run metrics directory; without Redis, each
    process reads the database every 0.2 s to hear the other (a reply submitted to one, awaited on the other)."""
    harness = Harness(
        f"sqlite:///{tmp_path_factory.mktemp('ops') / 'horde.db'}",
        settings={"HORDE_LOG_FORMAT": "json", **SHARED_DATABASE_SETTINGS},
        servers=0,
    )
    server = GunicornServer(harness.env)
    harness.servers.append(server)
    yield harness, server
    harness.close()


def json_lines(output: str) -> list[dict]:
    return [json.loads(line) for line in output.splitlines() if line.startswith("{")]


def test_a_log_line_follows_a_chat_request_to_its_worker(production):
    harness, server = production
    model = unique_model("ops")
    worker = harness.worker([model], server=server)
    client = harness.openai(harness.user(kudos=100), server=server)
    completion = client.chat.completions.with_raw_response.create(
        model=model, messages=[{"role": "user", "content": "Hello"}], extra_headers={"x-request-id": "trace-e2e-1"}
    )
    assert completion.headers["x-request-id"] == "trace-e2e-1"
    request_id = completion.parse().model_extra["x_horde"]["request_id"]

    def line():
        return next(
            (record for record in json_lines(server.output()) if record.get("request_id") == "trace-e2e-1"), None
        )

    record = wait_until(line, what="the request's log line")
    assert record["route"] == "/v1/chat/completions" and record["method"] == "POST" and record["status"] == 200
    assert record["chat_request"] == request_id and record["worker"] == worker.worker_name
    assert isinstance(record["user"], int) and record["duration_ms"] > 0
    assert any(
        record["route"] == "/api/v2/generate/chat/pop" and record.get("worker") == worker.worker_name
        for record in json_lines(server.output())
    )


def test_metrics_sum_every_process(production):
    _, server = production
    for _ in range(MISSES):
        assert (
            requests.get(
                server.url + "/v1/models/ops-metrics/none", headers={"Connection": "close"}, timeout=10
            ).status_code
            == 404
        )
    route = dict(route="/v1/models/<path:model_id>", method="GET", status="404")
    # A process counts a request when its answer is closed, a moment after the client read it.
    wait_until(
        lambda: value(scrape(server.url), "horde_http_requests_total", **route) == MISSES,
        what="the run's count to include every request",
    )
    for _ in range(6):  # each scrape is answered by either process; every one sees both processes' counts
        assert value(scrape(server.url), "horde_http_requests_total", **route) == MISSES


def test_generation_metrics(production):
    harness, server = production
    model = unique_model("ops")
    harness.worker([model], server=server)
    client = harness.openai(harness.user(kudos=100), server=server)
    before = scrape(server.url)
    chunks = list(
        client.chat.completions.create(
            model=model, stream=True, messages=[{"role": "user", "content": "Something slow"}]
        )
    )
    assert chunks
    client.chat.completions.create(model=model, messages=[{"role": "user", "content": "Hello"}])
    after = scrape(server.url)
    done = dict(endpoint="chat.completions", outcome="done")
    assert (
        value(after, "horde_generation_requests_total", **done)
        == value(before, "horde_generation_requests_total", **done) + 2
    )
    for name in ("horde_time_to_first_token_seconds_count", "horde_time_to_completion_seconds_count"):
        assert value(after, name, endpoint="chat.completions") == value(before, name, endpoint="chat.completions") + 2
    assert value(after, "horde_open_streams", endpoint="chat.completions") == 0
    assert value(after, "horde_workers_online", model=model) == 1
    assert value(after, "horde_queue_depth", model=model) == 0


def test_gunicorns_access_log_is_written_when_asked(production):
    """The handler skips gunicorn's access line only while gunicorn's access log is off."""
    harness, quiet = production
    asked = GunicornServer(dict(harness.env, GUNICORN_CMD_ARGS="--access-logfile -"))
    try:
        for url in (asked.url, quiet.url):
            assert requests.get(url + "/health?access-log-probe", timeout=10).status_code == 200
        wait_until(lambda: 'GET /health?access-log-probe HTTP/1.1" 200' in asked.output(), what="the access line")
        assert "GET /health?access-log-probe HTTP/1.1" not in quiet.output()
    finally:
        asked.stop()
