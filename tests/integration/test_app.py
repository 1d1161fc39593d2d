"""The app factory: native Swagger docs and a configurable front prefix."""

import pytest

from horde.app import create_app


def test_native_swagger_documents_the_worker_and_client_routes(client):
    spec = client.get("/api/v2/swagger.json").json
    paths = set(spec["paths"])
    assert {"/generate/chat/pop", "/generate/chat/submit", "/generate/chat/async", "/find_user"} <= paths


@pytest.fixture
def settings(settings):
    return settings.replace(oai_prefix="/openai/v1")


def test_front_prefix_is_configurable(runtime):
    client = create_app(runtime=runtime).test_client()
    assert client.get("/openai/v1/models").status_code == 200
    assert client.get("/v1/models").status_code == 404
