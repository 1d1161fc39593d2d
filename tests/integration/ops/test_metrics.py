"""GET /metrics: Prometheus' text format, HTTP counters by route, database gauges, the optional token."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from horde.app import create_app
from tests.integration.helpers import pop, queued_id, submit
from tests.integration.ops.conftest import buffered_client


def samples(client, **headers) -> dict:
    response = client.get("/metrics", headers=headers)
    assert response.status_code == 200
    assert response.content_type.startswith("text/plain")
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(response.get_data(as_text=True))
        for sample in family.samples
    }


def value(metrics: dict, name: str, **labels) -> float:
    return metrics.get((name, tuple(sorted(labels.items()))), 0.0)


def test_http_requests_are_counted_by_route_method_and_status(client):
    before = value(
        samples(client), "horde_http_requests_total", route="/v1/models/<path:model_id>", method="GET", status="404"
    )
    for _ in range(3):
        client.get("/v1/models/no-such-model")
    after = samples(client)
    assert (
        value(after, "horde_http_requests_total", route="/v1/models/<path:model_id>", method="GET", status="404")
        == before + 3
    )
    assert (
        value(after, "horde_http_request_duration_seconds_count", route="/v1/models/<path:model_id>", method="GET") >= 3
    )


def test_queue_workers_jobs_and_kudos_come_from_the_database(client, make_user):
    _, worker_key = make_user(trusted=True)
    _, client_key = make_user(kudos=50)
    pop(client, worker_key, name="metrics-worker", models=("metrics/m",))
    for _ in range(2):
        queued_id(client, client_key, model="metrics/m")
    metrics = samples(client)
    assert value(metrics, "horde_queue_depth", model="metrics/m") == 2
    assert value(metrics, "horde_workers_online", model="metrics/m") == 1

    job = pop(client, worker_key, name="metrics-worker", models=("metrics/m",))
    assert submit(client, worker_key, job["id"]).status_code == 200
    metrics = samples(client)
    assert value(metrics, "horde_queue_depth", model="metrics/m") == 1
    assert value(metrics, "horde_jobs_ended_total", state="submitted") == 1
    assert value(metrics, "horde_kudos_moved_total", kind="grant") == 50
    assert (
        value(metrics, "horde_kudos_moved_total", kind="charge")
        == value(metrics, "horde_kudos_moved_total", kind="reward")
        > 0
    )


def test_the_metrics_token_is_required_when_set(runtime):
    runtime.settings = runtime.settings.replace(metrics_token="s3cret")
    client = buffered_client(create_app(runtime=runtime))
    assert client.get("/metrics").status_code == 401
    refused = client.get("/metrics", headers={"Authorization": "Bearer wrong"})
    assert refused.status_code == 401 and refused.json["rc"] == "InvalidAPIKey"
    assert samples(client, Authorization="Bearer s3cret")
