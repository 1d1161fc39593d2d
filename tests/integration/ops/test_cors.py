"""CORS on /v1 and /api/v2: preflights, exposed headers, and a configured list of origins."""

from __future__ import annotations

import pytest

from horde.app import create_app

ORIGIN = "https://app.example"


def preflight(client, path, origin=ORIGIN, headers="authorization, content-type, x-stainless-os, x-stainless-lang"):
    return client.options(
        path,
        headers={"Origin": origin, "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": headers},
    )


@pytest.mark.parametrize(
    "path", ["/v1/chat/completions", "/v1/models", "/api/v2/generate/chat/async", "/api/v2/find_user"]
)
def test_preflight_allows_every_client_header(client, path):
    response = preflight(client, path)
    assert response.status_code == 204
    assert response.headers["Access-Control-Allow-Origin"] == "*"
    methods = {name.strip() for name in response.headers["Access-Control-Allow-Methods"].split(",")}
    assert {"GET", "POST", "DELETE", "OPTIONS"} <= methods
    allowed = {name.strip().lower() for name in response.headers["Access-Control-Allow-Headers"].split(",")}
    assert {
        "authorization",
        "content-type",
        "idempotency-key",
        "x-title",
        "http-referer",
        "apikey",
        "client-agent",
        "x-api-key",
        "anthropic-version",
        "x-stainless-os",
        "x-stainless-lang",
    } <= allowed
    assert int(response.headers["Access-Control-Max-Age"]) > 0


def test_answers_expose_the_retry_and_trace_headers(client):
    response = client.get("/v1/models", headers={"Origin": ORIGIN})
    assert response.status_code == 200
    assert response.headers["Access-Control-Allow-Origin"] == "*"
    exposed = {name.strip().lower() for name in response.headers["Access-Control-Expose-Headers"].split(",")}
    assert {"x-should-retry", "retry-after", "idempotent-replayed", "x-request-id"} <= exposed


def test_errors_carry_cors_headers_so_a_page_can_read_them(client):
    response = client.post("/v1/chat/completions", json={}, headers={"Origin": ORIGIN})
    assert response.status_code == 400
    assert response.headers["Access-Control-Allow-Origin"] == "*"
    assert client.get("/v1/no-such-thing", headers={"Origin": ORIGIN}).headers["Access-Control-Allow-Origin"] == "*"


def test_paths_outside_the_apis_get_no_cors(client):
    assert "Access-Control-Allow-Origin" not in client.get("/health", headers={"Origin": ORIGIN}).headers


def test_a_configured_list_admits_only_its_origins(runtime):
    runtime.settings = runtime.settings.replace(cors_origins=(ORIGIN, "http://localhost:3000"))
    client = create_app(runtime=runtime).test_client()
    allowed = preflight(client, "/v1/chat/completions")
    assert allowed.status_code == 204
    assert allowed.headers["Access-Control-Allow-Origin"] == ORIGIN
    assert "Origin" in allowed.headers["Vary"]
    assert client.get("/v1/models", headers={"Origin": ORIGIN}).headers["Access-Control-Allow-Origin"] == ORIGIN

    refused = preflight(client, "/v1/chat/completions", origin="https://evil.example")
    assert not [name for name, _ in refused.headers.items() if name.lower().startswith("access-control-")]
    answer = client.get("/v1/models", headers={"Origin": "https://evil.example"})
    assert answer.status_code == 200
    assert not [name for name, _ in answer.headers.items() if name.lower().startswith("access-control-")]
