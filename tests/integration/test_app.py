"""The app factory: native Swagger docs, a configurable front prefix, and an app bound to another runtime."""

import gc
import weakref

import pytest

from horde.accounts import service as accounts
from horde.app import bind_runtime, create_app, init_schema
from horde.runtime import Runtime
from tests.support.processes import free_port


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


@pytest.fixture
def other_runtime(runtime, tmp_path):
    """A second runtime with the same app-shaping settings: its own database, a small body limit, and a Redis
    nobody listens on (so that its /ready differs from the first's)."""
    settings = runtime.settings.replace(
        database_url=f"sqlite:///{tmp_path / 'other.db'}",
        max_body_bytes=1000,
        redis_url=f"redis://127.0.0.1:{free_port()}/0",
    )
    hub = Runtime.build(settings)
    init_schema(hub)
    yield hub
    hub.close()


def test_an_app_bound_to_another_runtime_answers_from_that_runtime(runtime, other_runtime, make_user):
    app = create_app(runtime=runtime)
    _, first_key = make_user("first-runtime-user")
    with other_runtime.db.transaction() as session:
        _, other_key = accounts.create_user(session, "other-runtime-user")

    bind_runtime(app, other_runtime)

    client = app.test_client()
    found = client.get("/api/v2/find_user", headers={"apikey": other_key})
    assert found.status_code == 200 and found.json["username"].startswith("other-runtime-user#")
    assert client.get("/api/v2/find_user", headers={"apikey": first_key}).status_code == 401  # not in its database
    assert client.get("/openai/v1/models", headers={"Authorization": f"Bearer {first_key}"}).status_code == 401
    assert app.config["MAX_CONTENT_LENGTH"] == 1000
    refused = client.post("/api/v2/nowhere", data="x" * 1001)  # refused on its declared length, before routing
    assert (refused.status_code, refused.json["rc"]) == (413, "request_too_large")
    assert client.get("/ready").json["down"] == ["redis"]

    bind_runtime(app, runtime)

    assert client.get("/api/v2/find_user", headers={"apikey": first_key}).status_code == 200
    assert client.post("/api/v2/nowhere", data="x" * 1001).status_code == 404
    assert client.get("/ready").json["down"] == []


@pytest.mark.parametrize(
    "change", [{"oai_prefix": "/v1"}, {"cors_origins": ("https://app.example",)}, {"log_format": "json"}]
)
def test_a_runtime_whose_settings_shape_another_app_is_refused(runtime, change):
    app = create_app(runtime=runtime)
    shaped_otherwise = Runtime.build(runtime.settings.replace(**change))
    try:
        with pytest.raises(ValueError, match="build another"):
            bind_runtime(app, shaped_otherwise)
    finally:
        shaped_otherwise.close()
    assert app.extensions["horde"] is runtime  # left as it was
