"""The native Swagger document: every body written from its marshmallow schema, and real answers that match it.

The answers are built as dicts on the hot paths, so this is what keeps the document and the code together:
each call below validates the answer it got against the schema the document gives for that path, method
and status, and fails when the answer has a key the document lacks, lacks a required one, or has another type.
"""

from __future__ import annotations

import copy

import jsonschema
import pytest

from horde.chat.schemas import CHAT_REQUEST_SCHEMA, ChatStatusSchema
from horde.http.swagger import schema_definition
from horde.registration import signin
from horde.text.schemas import GENERATION_INPUT_SCHEMA
from horde.workers.schemas import POP_SCHEMA, SUBMIT_SCHEMA
from tests.support.moderation import with_role
from tests.support.native import ALL_FEATURES, declaration
from tests.support.text_api import text_pop

WORKER_NAME = "documented-worker"
#: POSTs that read no body: a new API key (the caller's key, or the sign-in session, says whose).
POSTS_WITHOUT_A_BODY = {"/users/{user_id}/api_key", "/oidc/api_key"}


@pytest.fixture
def spec(client):
    return client.get("/api/v2/swagger.json").json


def _operations(spec):
    for path, methods in spec["paths"].items():
        for method, operation in methods.items():
            if method != "parameters":
                yield path, method, operation


def test_every_native_operation_documents_its_success_body(spec):
    for path, method, operation in _operations(spec):
        successes = {code: answer for code, answer in operation["responses"].items() if code.startswith("2")}
        assert successes, f"{method} {path}"
        assert all("schema" in answer for answer in successes.values()), f"{method} {path}"
        assert operation["responses"]["default"]["schema"] == {"$ref": "#/definitions/Error"}, f"{method} {path}"
        if method == "post":
            bodies = [parameter for parameter in operation.get("parameters", []) if parameter["in"] == "body"]
            if path in POSTS_WITHOUT_A_BODY:
                assert bodies == [], f"{method} {path}"
            else:
                assert len(bodies) == 1 and "$ref" in bodies[0]["schema"], f"{method} {path}"


def test_the_request_bodies_are_the_marshmallow_schemas_with_their_required_fields(spec):
    definitions = spec["definitions"]
    for name, schema in (
        ("ChatRequest", CHAT_REQUEST_SCHEMA),
        ("ChatPop", POP_SCHEMA),
        ("ChatSubmit", SUBMIT_SCHEMA),
        ("TextRequest", GENERATION_INPUT_SCHEMA),
        ("ChatStatus", ChatStatusSchema),
    ):
        assert definitions[name] == schema_definition(schema), name
    assert definitions["ChatRequest"]["required"] == ["messages"]
    assert definitions["ChatRequest"]["additionalProperties"] is False
    assert set(definitions["ChatPop"]["required"]) == {"name", "models", "max_length", "max_context_length"}
    assert definitions["ChatSubmit"]["properties"]["pop"]["properties"] == definitions["ChatPop"]["properties"]
    assert definitions["ChatPop"]["properties"]["wait"] == {"type": "number", "minimum": 0, "maximum": 30, "default": 0}
    assert definitions["TextRequest"]["required"] == ["prompt"]
    assert "additionalProperties" not in definitions["TextRequest"]  # unknown keys are warned about, not refused
    assert definitions["TextSubmit"]["properties"]["state"]["enum"][0] == "ok"
    assert {"id", "state", "reply", "queue_position"} <= set(definitions["ChatStatus"]["required"])
    context = definitions["ChatStatus"]["properties"]["context_adjustments"]
    assert "from" in context["items"]["required"] and context["x-nullable"] is True


def _json_schema(node):
    """Swagger 2.0's `x-nullable` as a JSON schema null alternative, for the validator."""
    if isinstance(node, list):
        return [_json_schema(item) for item in node]
    if not isinstance(node, dict):
        return node
    node = {key: _json_schema(value) for key, value in node.items()}
    if node.pop("x-nullable", False):
        return {"anyOf": [node, {"type": "null"}]}
    return node


class Documented:
    """Calls the app and checks each answer against the document's schema for its path, method and status."""

    def __init__(self, client, spec):
        self.client = client
        self.spec = spec
        self.definitions = _json_schema(copy.deepcopy(spec["definitions"]))
        self.checked: set[tuple[str, str]] = set()

    def __call__(self, method, path, key=None, json=None, refused=None, **path_values):
        """The answer's body; a success unless `refused` names the status expected."""
        headers = {"apikey": key} if key else {}
        url = "/api/v2" + path.format(**path_values)
        answer = self.client.open(url, method=method.upper(), json=json, headers=headers)
        assert answer.status_code == refused if refused else answer.status_code < 300, (method, url, answer.json)
        return self.validate(method, path, answer, refused=bool(refused))

    def validate(self, method, path, answer, refused=False):
        """Check an answer the test got itself (with headers of its own) against the document."""
        assert refused or answer.status_code < 300, (method, path, answer.json)
        template = path.partition("?")[0]
        responses = self.spec["paths"][template][method]["responses"]
        documented = responses["default" if refused else str(answer.status_code)]["schema"]
        schema = dict(_json_schema(documented), definitions=self.definitions)
        jsonschema.Draft4Validator(schema).validate(answer.json)
        self.checked.add((template, method))
        return answer.json


def test_real_answers_match_the_documented_bodies(client, spec, make_user, runtime):
    call = Documented(client, spec)
    _, owner = make_user()
    _, key = make_user(kudos=1000)
    worker = declaration(WORKER_NAME, features=ALL_FEATURES)

    assert call("post", "/generate/chat/pop", owner, json=worker)["id"] is None
    text_pop(client, owner, name=WORKER_NAME)
    call("post", "/generate/text/async", key, json={"prompt": "Once", "models": ["m1"], "dry_run": True})
    waiting = call("post", "/generate/chat/async", key, json={"model": "m1", "messages": [_hello()]})["id"]
    call("get", "/generate/chat/status/{request_id}", key, request_id=waiting)
    cancelled = call("post", "/generate/chat/async", key, json={"model": "m1", "messages": [_hello()]})["id"]
    call("delete", "/generate/chat/status/{request_id}", key, request_id=cancelled)
    call("get", "/status/models")

    job = call("post", "/generate/chat/pop", owner, json=worker)
    call("post", "/generate/chat/progress", owner, json={"id": job["id"], "content": "Hel"})
    call("get", "/generate/chat/status/{request_id}", key, request_id=waiting)
    call("post", "/generate/chat/submit", owner, json={"id": job["id"], "content": "Hello", "usage": {}})
    assert call("get", "/generate/chat/status/{request_id}", key, request_id=waiting)["reply"]["content"] == "Hello"

    faulted = call("post", "/generate/chat/async", key, json={"model": "m1", "messages": [_hello()]})["id"]
    job = call("post", "/generate/chat/pop", owner, json=worker)
    call("post", "/generate/chat/fault", owner, json={"id": job["id"], "reason": "out of memory"})
    assert call("get", "/generate/chat/status/{request_id}", key, request_id=faulted)["faulted"] is not None

    # A fault and submits carrying the next pop: a job, no job, and a pop refused after the call succeeded.
    job = call("post", "/generate/chat/pop", owner, json=worker)
    job = call("post", "/generate/chat/fault", owner, json={"id": job["id"], "pop": worker})["next"]
    assert job["id"] is not None
    assert call("post", "/generate/chat/submit", owner, json={"id": job["id"], "pop": worker})["next"]["id"] is None
    _, other_owner = make_user()
    call("post", "/generate/chat/pop", other_owner, json=declaration("taken-name"))
    call("post", "/generate/chat/async", key, json={"model": "m1", "messages": [_hello()]})
    job = call("post", "/generate/chat/pop", owner, json=worker)
    refused = call("post", "/generate/chat/submit", owner, json={"id": job["id"], "pop": declaration("taken-name")})
    assert refused["next"]["rc"] == "WorkerNameTaken"

    text = call("post", "/generate/text/async", key, json={"prompt": "Once", "models": ["m1"], "extra": 1})["id"]
    text_job = call("post", "/generate/text/pop", owner, json={"name": WORKER_NAME, "models": ["m1"]})
    call("post", "/generate/text/submit", owner, json={"id": text_job["id"], "generation": "upon a time"})
    call("get", "/generate/text/status/{request_id}", request_id=text)
    other = call("post", "/generate/text/async", key, json={"prompt": "Twice", "models": ["m1"]})["id"]
    call("delete", "/generate/text/status/{request_id}", request_id=other)

    for path in (
        "/status/models",
        "/status/heartbeat",
        "/stats/chat/totals",
        "/stats/text/totals",
        "/stats/text/models",
    ):
        call("get", path)
    call("get", "/status/models?type=text")
    call("get", "/status/models?type=chat")
    call("get", "/status/models/{model_name}", model_name="m1")
    call("get", "/status/models/{model_name}?type=chat", model_name="m1")
    for path in (
        "/status/performance",
        "/status/news",
        "/status/modes",
        "/teams",
        "/stats/img/totals",
        "/stats/img/models",
    ):
        call("get", path)
    worker_id = call("get", "/workers")[0]["id"]
    call("get", "/workers?type=chat")
    call("get", "/workers/{worker_id}", worker_id=worker_id)
    call("get", "/workers/name/{worker_name}", worker_name=WORKER_NAME)
    call("put", "/workers/{worker_id}", owner, json={"maintenance": True, "info": "a note"}, worker_id=worker_id)
    call("put", "/workers/{worker_id}", key, json={"maintenance": False}, refused=403, worker_id=worker_id)
    call("get", "/find_user", key)
    receiver, _ = make_user()
    call("get", "/users")
    call("get", "/users/{user_id}", key, user_id=receiver.id)
    call("post", "/kudos/transfer", key, json={"username": f"{receiver.username}#{receiver.id}", "amount": 1})
    lent = call("post", "/sharedkeys", key, json={"kudos": 10, "name": "lent kudos"})["id"]
    call("put", "/sharedkeys", key, json={"expiry": 1})
    call("get", "/sharedkeys/{sharedkey_id}", sharedkey_id=lent)
    call("patch", "/sharedkeys/{sharedkey_id}", key, json={"max_text_tokens": 100}, sharedkey_id=lent)
    call("delete", "/sharedkeys/{sharedkey_id}", key, sharedkey_id=lent)
    me, owner_id = call("get", "/find_user", key)["id"], call("get", "/find_user", owner)["id"]
    page = call("get", "/users/{user_id}/ledger?limit=1", key, user_id=me)
    call("get", "/users/{user_id}/ledger?cursor=" + page["next_cursor"], key, user_id=me)
    call("get", "/users/{user_id}/balance_history", key, user_id=me)
    call("get", "/users/{user_id}/usage?days=2", key, user_id=me)
    call("get", "/users/{user_id}/workers", owner, user_id=owner_id)
    call("get", "/users/{user_id}/ledger", owner, refused=403, user_id=me)
    call("get", "/stats/series?minutes=10")
    call("get", "/stats/series?minutes=5", refused=400)

    call("post", "/generate/chat/async", key, json={"model": "m1", "messages": []}, refused=400)
    call("get", "/generate/chat/status/{request_id}", key, refused=404, request_id="no-such-request")
    call("get", "/find_user", "not-a-key", refused=401)
    call("get", "/workers/{worker_id}", refused=404, worker_id="no-such-worker")
    call("get", "/teams/{team_id}", refused=404, team_id="no-such-team")
    admin = with_role(runtime, make_user, "admin")[1]
    call("put", "/users/{user_id}", admin, json={"concurrency": 5, "kudos": 3}, user_id=receiver.id)
    call("get", "/users/{user_id}", admin, user_id=receiver.id)
    call("get", "/status/modes", admin)
    call("put", "/status/modes", admin, json={"invite_only_mode": False})
    call("post", "/kudos/award", admin, json={"username": f"x#{receiver.id}", "amount": 2})
    call("post", "/operations/ipaddr", admin, json={"ipaddr": "192.0.2.0/24", "hours": 1})
    call("get", "/operations/ipaddr", admin)
    call("get", "/operations/ipaddr/{ipaddr}", admin, ipaddr="192.0.2.1")
    call("delete", "/operations/ipaddr", admin, json={"ipaddr": "192.0.2.0/24"})
    # The worker's recorded address is the test client's: the next call from it lifts the block.
    call("put", "/operations/block_worker_ipaddr/{worker_id}", admin, json={"days": 1}, worker_id=worker_id)
    call("delete", "/operations/block_worker_ipaddr/{worker_id}", admin, worker_id=worker_id)
    call("get", "/operations/audit", admin)
    call("delete", "/users/{user_id}", admin, user_id=receiver.id)
    call("delete", "/workers/{worker_id}", owner, worker_id=worker_id)

    call("get", "/register")
    made = call("post", "/register", json={"username": "documented"})
    call("post", "/users/{user_id}/api_key", made["api_key"], user_id=made["id"])
    call("get", "/oidc/session")
    call("post", "/oidc/api_key", refused=401)
    call("delete", "/oidc/session", refused=401)
    cookie, _ends = signin.start(runtime, made["id"], new_account=True)
    client.set_cookie(signin.SESSION_COOKIE, cookie)
    csrf = call("get", "/oidc/session")["csrf_token"]
    answer = client.post("/api/v2/oidc/api_key", headers={signin.CSRF_HEADER: csrf})
    call.validate("post", "/oidc/api_key", answer)
    call.validate("delete", "/oidc/session", client.delete("/api/v2/oidc/session", headers={signin.CSRF_HEADER: csrf}))

    assert call.checked >= {(path, method) for path, method, _ in _operations(spec)}


def _hello():
    return {"role": "user", "content": "Hello"}
