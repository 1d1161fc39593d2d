"""Unserved endpoints are unsupported_endpoint; a model stays known after its worker stops declaring it."""

from tests.support.native import pop
from tests.support.text_api import text_pop

BODY = {"model": "m1", "messages": [{"role": "user", "content": "Hello"}]}


def test_an_unserved_path_is_404_unsupported_endpoint(client):
    response = client.post("/v1/embeddings", json={"model": "m1", "input": "Hi"})
    assert response.status_code == 404
    error = response.json["error"]
    assert error["code"] == "unsupported_endpoint" and error["type"] == "invalid_request_error"
    assert "POST /v1/embeddings" in error["message"]
    for served in ("POST /v1/chat/completions", "GET /v1/models", "POST /v1/responses", "POST /v1/messages"):
        assert served in error["message"]
    assert client.get("/v1/audio/speech").json["error"]["code"] == "unsupported_endpoint"
    assert client.get("/api/v2/nothing-here").status_code == 404  # the native API keeps its own 404


def test_a_wrong_method_is_405_unsupported_endpoint(client):
    response = client.get("/v1/chat/completions")
    assert response.status_code == 405
    assert response.json["error"]["code"] == "unsupported_endpoint"
    assert "GET" in response.json["error"]["message"] and "POST" in response.headers["Allow"]
    assert client.delete("/v1/models").json["error"]["code"] == "unsupported_endpoint"


def test_a_model_stays_known_after_its_worker_drops_it(client, make_user):
    _, owner = make_user("owner")
    pop(client, owner, models=["m1", "m2"])
    pop(client, owner, models=["m2"])  # the same worker re-declares without m1
    response = client.post("/v1/chat/completions", json=BODY)
    assert response.status_code == 503, response.json
    assert response.json["error"]["code"] == "no_eligible_worker" and response.json["error"]["param"] == "model"
    never = client.post("/v1/chat/completions", json=dict(BODY, model="m3"))
    assert never.status_code == 404 and never.json["error"]["code"] == "model_not_found"


def test_a_text_model_stays_known_after_its_worker_drops_it(client, make_user):
    _, owner = make_user("owner")
    text_pop(client, owner, models=["m1", "m2"])
    text_pop(client, owner, models=["m2"])  # the same worker re-declares without m1
    body = {"model": "m1", "prompt": "Once", "max_tokens": 16}
    response = client.post("/v1/completions", json=body)
    assert response.status_code == 503, response.json
    assert response.json["error"]["code"] == "no_eligible_worker" and response.json["error"]["param"] == "model"
    never = client.post("/v1/completions", json=dict(body, model="m3"))
    assert never.status_code == 404 and never.json["error"]["code"] == "model_not_found"
