"""The app factory: native Swagger docs and a configurable front prefix."""

import gc
import weakref

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


def test_an_app_made_after_another_leaves_the_first_one_collectable(runtime):
    """flask-restx namespaces live at module level and remember the Apis they were added to: without
    horde/api.py keeping only the latest, every app a process made stayed alive (the tests make one each)."""
    first = create_app(runtime=runtime)
    first_alive = weakref.ref(first)
    second = create_app(runtime=runtime)
    del first
    gc.collect()
    assert first_alive() is None
    assert second.test_client().get("/api/v2/status/heartbeat").status_code == 200
