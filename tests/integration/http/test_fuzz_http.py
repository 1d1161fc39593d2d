"""Body fuzzing over HTTP, on both APIs and both databases: any body is answered, never with a 500.

The unit fuzz (tests/unit/oai/screening/test_fuzz.py) covers the front's screening
alone; this one sends mutated bodies through the whole app, admission and the
database included, with strings that hold NUL characters or lone surrogates.
"""

from __future__ import annotations

import base64
import copy
import json
import random

import pytest

from tests.support.fuzz import UNSTORABLE_STRINGS, mutate, random_json
from tests.support.image_server import PNG
from tests.support.native import ALL_FEATURES, ALL_GUARANTEES, declaration, pop

PIXEL = "data:image/png;base64," + base64.b64encode(PNG).decode()
SCHEMA = {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"], "additionalProperties": False}
ROUNDS = 50


def native_body():
    return {
        "model": "m1",
        "messages": [
            {"role": "system", "content": "json"},
            {
                "role": "user",
                "content": [{"type": "text", "text": "hi"}, {"type": "image_url", "image_url": {"url": PIXEL}}],
            },
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
            },
            {"role": "tool", "tool_call_id": "a", "content": "ok"},
            {"role": "user", "content": "and now?"},
        ],
        "tools": [{"type": "function", "function": {"name": "f", "parameters": copy.deepcopy(SCHEMA)}}],
        "tool_choice": "auto",
        "max_tokens": 64,
        "temperature": 0.5,
        "stop": ["x"],
        "seed": 3,
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "r", "schema": copy.deepcopy(SCHEMA), "strict": True},
        },
        "context_fitting": "truncate_oldest",
        "max_kudos": 1000,
        "availability_mode": "fail_fast",
    }


def front_body():
    body = native_body()
    body.pop("context_fitting"), body.pop("max_kudos"), body.pop("availability_mode")
    body["horde"] = {"only": ["w1"], "openai_guards": True}
    return body


def worker_bodies(job_id):
    return copy.deepcopy(
        {
            "pop": declaration("w2", features=ALL_FEATURES, guarantees=ALL_GUARANTEES, wait=0),
            "submit": {
                "id": job_id,
                "content": '{"a": "b"}',
                "finish_reason": "stop",
                "usage": {"prompt_tokens": 3, "completion_tokens": 2},
            },
            "progress": {"id": job_id, "content": "partial"},
            "fault": {"id": job_id, "reason": "broken"},
        }
    )


def post(client, path, body, headers):
    raw = json.dumps(body)  # NaN goes out as Python writes it, which the server must refuse or accept cleanly
    return client.post(path, data=raw, headers=dict(headers, **{"Content-Type": "application/json"}))


def assert_answered(response, native: bool):
    assert response.status_code < 500 or response.status_code == 503, (response.status_code, response.data[:500])
    body = response.get_json()
    if native and response.status_code >= 300:
        assert isinstance(body.get("message"), str) and isinstance(body.get("rc"), str)
    elif response.status_code >= 400:
        assert isinstance(body["error"]["message"], str)


@pytest.mark.parametrize("seed", range(2))
def test_native_chat_bodies_are_answered(client, make_user, seed):
    _, key = make_user("owner")
    pop(client, key, features=ALL_FEATURES, guarantees=ALL_GUARANTEES)
    rng = random.Random(2000 + seed)
    for _ in range(ROUNDS):
        body = native_body()
        for _ in range(rng.randint(1, 3)):
            body = mutate(rng, body)
        assert_answered(post(client, "/api/v2/generate/chat/async", body, {"apikey": key}), native=True)
        assert_answered(post(client, "/api/v2/generate/chat/async", random_json(rng), {"apikey": key}), native=True)


@pytest.mark.parametrize("seed", range(2))
def test_worker_bodies_are_answered(client, make_user, seed):
    _, key = make_user("owner")
    pop(client, key, features=ALL_FEATURES, guarantees=ALL_GUARANTEES)
    rng = random.Random(3000 + seed)
    for _ in range(ROUNDS):
        queued = post(
            client,
            "/api/v2/generate/chat/async",
            {"model": "m1", "messages": [{"role": "user", "content": "hi"}]},
            {"apikey": key},
        )
        assert queued.status_code == 202, queued.get_json()
        job = pop(client, key, features=ALL_FEATURES, guarantees=ALL_GUARANTEES)
        for path, body in worker_bodies(job["id"] or "none").items():
            if rng.random() < 0.8:
                body = mutate(rng, body)
            if path == "pop" and isinstance(body, dict) and "wait" in body:
                body["wait"] = 0  # a long-poll would only slow the test down
            assert_answered(post(client, f"/api/v2/generate/chat/{path}", body, {"apikey": key}), native=True)
        if job["id"]:  # whatever the fuzz left, end the job so the next round pops a fresh one
            post(client, "/api/v2/generate/chat/fault", {"id": job["id"]}, {"apikey": key})


@pytest.mark.parametrize("seed", range(2))
def test_front_bodies_are_answered(client, seed):
    """No worker is online: a body that passes screening ends in no_eligible_worker (503), never a 500."""
    rng = random.Random(4000 + seed)
    for _ in range(ROUNDS):
        body = front_body()
        for _ in range(rng.randint(1, 3)):
            body = mutate(rng, body)
        assert_answered(post(client, "/v1/chat/completions", body, {}), native=False)


@pytest.mark.parametrize("text", UNSTORABLE_STRINGS)
@pytest.mark.parametrize("field", ["name", "models", "bridge_agent"])
def test_unstorable_strings_in_a_declaration_are_400(client, make_user, field, text):
    _, key = make_user("owner")
    body = declaration("w1")
    body[field] = [text] if field == "models" else text
    response = post(client, "/api/v2/generate/chat/pop", body, {"apikey": key})
    assert (response.status_code, response.get_json()["rc"]) == (400, "BadRequest")
    assert response.get_json()["param"] == (f"{field}[0]" if field == "models" else field)


@pytest.mark.parametrize("text", UNSTORABLE_STRINGS)
def test_unstorable_strings_in_ids_and_models_are_400_on_both_apis(client, make_user, text):
    _, key = make_user("owner")
    for path in ("submit", "progress", "fault"):
        response = post(client, f"/api/v2/generate/chat/{path}", {"id": text, "content": "x"}, {"apikey": key})
        assert (response.status_code, response.get_json()["rc"], response.get_json()["param"]) == (
            400,
            "BadRequest",
            "id",
        ), path
    queued = post(
        client,
        "/api/v2/generate/chat/async",
        {"model": text, "messages": [{"role": "user", "content": "hi"}]},
        {"apikey": key},
    )
    assert (queued.status_code, queued.get_json()["param"]) == (400, "model")
    front = post(
        client,
        "/v1/chat/completions",
        {"model": text, "messages": [{"role": "user", "content": "hi"}]},
        {"Authorization": f"Bearer {key}"},
    )
    assert (front.status_code, front.get_json()["error"]["param"]) == (400, "model")


def test_a_nul_in_a_path_id_is_400(client, make_user):
    _, key = make_user("owner")
    for method in (client.get, client.delete):
        response = method("/api/v2/generate/chat/status/abc%00def", headers={"apikey": key})
        assert (response.status_code, response.get_json()["rc"]) == (400, "BadRequest")


@pytest.mark.parametrize(
    "field, value, param",
    [
        ("response_format", {"type": "json_schema", "json_schema": 5}, "response_format.json_schema"),
        ("tools", [{"type": "function", "function": 5}], "tools[0].function"),
        ("tool_choice", {"type": "function", "function": "f"}, "tool_choice.function"),
    ],
)
def test_native_shapes_the_horde_reads_are_400(client, make_user, field, value, param):
    _, key = make_user("owner")
    pop(client, key, features=ALL_FEATURES, guarantees=ALL_GUARANTEES)
    body = {"model": "m1", "messages": [{"role": "user", "content": "hi"}], field: value}
    if field == "tool_choice":
        body["tools"] = [{"type": "function", "function": {"name": "f"}}]
    response = post(client, "/api/v2/generate/chat/async", body, {"apikey": key})
    assert (response.status_code, response.get_json()["rc"], response.get_json()["param"]) == (400, "BadRequest", param)


@pytest.mark.parametrize(
    "image_url, param",
    [
        ("http://127.0.0.1/x.png", "messages[0].content[0].image_url"),
        ({"url": 5}, "messages[0].content[0].image_url.url"),
        ({"url": ["http://127.0.0.1/x.png"]}, "messages[0].content[0].image_url.url"),
    ],
)
def test_native_image_url_of_the_wrong_type_is_400(client, make_user, image_url, param):
    _, key = make_user("owner")
    pop(client, key, features=ALL_FEATURES, guarantees=ALL_GUARANTEES)
    body = {"model": "m1", "messages": [{"role": "user", "content": [{"type": "image_url", "image_url": image_url}]}]}
    response = post(client, "/api/v2/generate/chat/async", body, {"apikey": key})
    assert (response.status_code, response.get_json()["rc"], response.get_json()["param"]) == (400, "BadRequest", param)


def test_a_nul_in_the_client_agent_header_is_dropped_not_stored(client, make_user, runtime):
    """Headers may carry NUL; PostgreSQL text may not. The agent is stored without it."""
    from horde.chat.models import ChatRequest

    _, key = make_user("owner")
    pop(client, key)
    body = {"model": "m1", "messages": [{"role": "user", "content": "hi"}]}
    response = post(client, "/api/v2/generate/chat/async", body, {"apikey": key, "Client-Agent": "app\x00:1:x"})
    assert response.status_code == 202, response.get_json()
    with runtime.db.read() as session:
        assert session.get(ChatRequest, response.get_json()["id"]).client_agent == "app:1:x"
