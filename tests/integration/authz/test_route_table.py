"""Every route that changes state, walked through the authorization table (horde/authz/rules.py) with six callers:
the target's owner (own key), another user's key, a shared key of the owner, no key, a moderator and an admin.

Each call starts from a fresh world (its users, a worker, queued requests, shared keys). Where the table refuses
the caller, the answer must be the table's refusal, exactly (status and rc); where it lets the caller through,
the answer must be no refusal of the table (the call may still fail later, on its body: that is not this test's
business). A route that changes state and has no scenario here fails the coverage test: a new route joins the
table and this walk in the same change.
"""

from __future__ import annotations

import io
import uuid
from collections.abc import Callable
from dataclasses import dataclass

import pytest

from horde.accounts import roles
from horde.authz.check import permits, refusal
from horde.authz.roles import KeyKind, Role
from horde.authz.rules import TABLE, Action
from horde.config import Settings
from tests.support.native import declaration, pop, queued_id
from tests.support.text_api import text_pop, text_queued

CALLERS = ("own", "other", "shared", "anonymous", "moderator", "admin")
#: How each caller stands before the table: its key kind, its role, and whether it owns the world's targets.
STANDING = {
    "own": (KeyKind.OWN, Role.USER, True),
    "other": (KeyKind.OWN, Role.USER, False),
    "shared": (KeyKind.SHARED, Role.USER, True),
    "anonymous": (KeyKind.ANONYMOUS, Role.USER, False),
    "moderator": (KeyKind.OWN, Role.MODERATOR, False),
    "admin": (KeyKind.OWN, Role.ADMIN, False),
}
#: Routes whose method is POST but that change nothing (they count or price).
READ_ONLY = {("POST", "/v1/messages/count_tokens")}
STATE_CHANGING_METHODS = {"POST", "PUT", "PATCH", "DELETE"}
#: A model no worker ever declared: the front's generation routes refuse it at admission, after the check and
#: before any wait for a worker.
UNKNOWN_MODEL = "authz/unknown-model"


@pytest.fixture
def settings(database_url):
    """No grace for a model's workers to come back: a generation the world's workers cannot take is refused at
    once rather than after the front's 20 s."""
    return Settings.from_env({}, database_url=database_url, affinity_wait_ms=0, oai_no_worker_grace_s=0)


@dataclass
class World:
    client: object
    keys: dict[str, str | None]
    owner_id: int
    owner_alias: str
    other_alias: str
    worker_id: str
    spare_shared_key: str
    chat_request: str
    text_request: str
    chat_model: str
    text_model: str


def _world(client, make_user, runtime) -> World:
    owner, owner_key = make_user(kudos=1000)
    other, other_key = make_user(kudos=1000)
    moderator, moderator_key = make_user(kudos=1000)
    admin, admin_key = make_user(kudos=1000)
    with runtime.db.transaction() as session:
        roles.set_role(session, moderator.username, "moderator")
        roles.set_role(session, admin.username, "admin")
    shared = client.put("/api/v2/sharedkeys", json={"kudos": 500}, headers={"apikey": owner_key}).json["id"]
    spare = client.put("/api/v2/sharedkeys", json={"kudos": 5}, headers={"apikey": owner_key}).json["id"]
    tag = uuid.uuid4().hex[:8]
    chat_model, text_model = f"authz-chat-{tag}", f"authz-text-{tag}"
    pop(client, owner_key, f"authz-chat-worker-{tag}", models=[chat_model])
    text_pop(client, owner_key, f"authz-text-worker-{tag}", models=[text_model])
    worker = client.get(f"/api/v2/workers/name/authz-text-worker-{tag}").json["id"]
    keys = {
        "own": owner_key,
        "other": other_key,
        "shared": shared,
        "anonymous": None,
        "moderator": moderator_key,
        "admin": admin_key,
    }
    return World(
        client=client,
        keys=keys,
        owner_id=owner.id,
        owner_alias=f"{owner.username}#{owner.id}",
        other_alias=f"{other.username}#{other.id}",
        worker_id=worker,
        spare_shared_key=spare,
        chat_request=queued_id(client, owner_key, model=chat_model),
        text_request=text_queued(client, owner_key, models=[text_model]),
        chat_model=chat_model,
        text_model=text_model,
    )


def _native(key: str | None) -> dict:
    return {"apikey": key} if key else {}


def _bearer(key: str | None) -> dict:
    return {"Authorization": f"Bearer {key}"} if key else {}


@dataclass(frozen=True)
class Scenario:
    method: str
    rule: str
    action: Action
    call: Callable[[World, str | None], object]
    variant: str = ""

    @property
    def name(self) -> str:
        return f"{self.method} {self.rule}{' ' + self.variant if self.variant else ''}"


def _worker_put(body: dict) -> Callable[[World, str | None], object]:
    return lambda w, key: w.client.put(f"/api/v2/workers/{w.worker_id}", json=body, headers=_native(key))


def _job_call(path: str, **body: str) -> Callable[[World, str | None], object]:
    """A worker's call about a job the Horde never handed out: refused or JobNotFound, with a valid body."""
    return lambda w, key: w.client.post(path, json={"id": str(uuid.uuid4()), **body}, headers=_native(key))


def _front_post(path: str, body: dict) -> Callable[[World, str | None], object]:
    """A generation through the front for a model no worker ever declared: refused at admission, after the check."""
    headers = {"anthropic-version": "2023-06-01"}
    return lambda w, key: w.client.post(path, json={"model": UNKNOWN_MODEL, **body}, headers=_bearer(key) | headers)


SCENARIOS = (
    Scenario(
        "POST",
        "/api/v2/generate/chat/async",
        Action.GENERATE,
        lambda w, key: w.client.post(
            "/api/v2/generate/chat/async",
            json={"model": w.chat_model, "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 16},
            headers=_native(key),
        ),
    ),
    Scenario(
        "POST",
        "/api/v2/generate/text/async",
        Action.GENERATE,
        lambda w, key: w.client.post(
            "/api/v2/generate/text/async",
            json={"prompt": "Once", "models": [w.text_model], "params": {"max_length": 16}},
            headers=_native(key),
        ),
    ),
    Scenario(
        "POST",
        "/v1/chat/completions",
        Action.GENERATE,
        _front_post("/v1/chat/completions", {"messages": [{"role": "user", "content": "Hi"}]}),
    ),
    Scenario("POST", "/v1/completions", Action.GENERATE, _front_post("/v1/completions", {"prompt": "Once"})),
    Scenario("POST", "/v1/responses", Action.GENERATE, _front_post("/v1/responses", {"input": "Hi"})),
    Scenario(
        "POST",
        "/v1/messages",
        Action.GENERATE,
        _front_post("/v1/messages", {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 16}),
    ),
    Scenario(
        "DELETE",
        "/api/v2/generate/chat/status/<string:request_id>",
        Action.MANAGE_OWN_REQUEST,
        lambda w, key: w.client.delete(f"/api/v2/generate/chat/status/{w.chat_request}", headers=_native(key)),
    ),
    Scenario(
        "DELETE",
        "/api/v2/generate/text/status/<string:request_id>",
        Action.MANAGE_OWN_REQUEST,
        lambda w, key: w.client.delete(f"/api/v2/generate/text/status/{w.text_request}", headers=_native(key)),
    ),
    Scenario(
        "DELETE",
        "/v1/responses/<response_id>",
        Action.MANAGE_OWN_REQUEST,
        lambda w, key: w.client.delete(f"/v1/responses/resp_{uuid.uuid4().hex}", headers=_bearer(key)),
    ),
    Scenario(
        "POST",
        "/v1/responses/<response_id>/cancel",
        Action.MANAGE_OWN_REQUEST,
        lambda w, key: w.client.post(f"/v1/responses/resp_{uuid.uuid4().hex}/cancel", headers=_bearer(key)),
    ),
    Scenario(
        "POST",
        "/v1/files",
        Action.MANAGE_FILES,
        lambda w, key: w.client.post(
            "/v1/files",
            data={"purpose": "batch", "file": (io.BytesIO(b'{"custom_id": "a"}\n'), "in.jsonl")},
            headers=_bearer(key),
            content_type="multipart/form-data",
        ),
    ),
    Scenario(
        "DELETE",
        "/v1/files/<file_id>",
        Action.MANAGE_FILES,
        lambda w, key: w.client.delete(f"/v1/files/file-{uuid.uuid4().hex}", headers=_bearer(key)),
    ),
    Scenario(
        "POST",
        "/v1/batches",
        Action.RUN_BATCHES,
        lambda w, key: w.client.post(
            "/v1/batches",
            json={
                "input_file_id": f"file-{uuid.uuid4().hex}",
                "endpoint": "/v1/chat/completions",
                "completion_window": "24h",
            },
            headers=_bearer(key),
        ),
    ),
    Scenario(
        "POST",
        "/v1/batches/<batch_id>/cancel",
        Action.RUN_BATCHES,
        lambda w, key: w.client.post(f"/v1/batches/batch_{uuid.uuid4().hex}/cancel", headers=_bearer(key)),
    ),
    Scenario(
        "POST",
        "/api/v2/generate/chat/pop",
        Action.RUN_WORKER,
        lambda w, key: w.client.post(
            "/api/v2/generate/chat/pop",
            json=declaration(f"authz-new-{uuid.uuid4().hex[:8]}", models=["authz-unserved"]),
            headers=_native(key),
        ),
    ),
    Scenario(
        "POST",
        "/api/v2/generate/chat/progress",
        Action.RUN_WORKER,
        _job_call("/api/v2/generate/chat/progress", content="Hi"),
    ),
    Scenario(
        "POST",
        "/api/v2/generate/chat/submit",
        Action.RUN_WORKER,
        _job_call("/api/v2/generate/chat/submit", content="Hi"),
    ),
    Scenario("POST", "/api/v2/generate/chat/fault", Action.RUN_WORKER, _job_call("/api/v2/generate/chat/fault")),
    Scenario(
        "POST",
        "/api/v2/generate/text/pop",
        Action.RUN_WORKER,
        lambda w, key: w.client.post(
            "/api/v2/generate/text/pop",
            json={"name": f"authz-new-{uuid.uuid4().hex[:8]}", "models": ["authz-unserved"], "max_length": 64},
            headers=_native(key),
        ),
    ),
    Scenario(
        "POST",
        "/api/v2/generate/text/submit",
        Action.RUN_WORKER,
        _job_call("/api/v2/generate/text/submit", generation="Hi"),
    ),
    Scenario(
        "PUT",
        "/api/v2/workers/<string:worker_id>",
        Action.SET_WORKER_MAINTENANCE,
        _worker_put({"maintenance": True}),
        "maintenance",
    ),
    Scenario("PUT", "/api/v2/workers/<string:worker_id>", Action.SET_WORKER_INFO, _worker_put({"info": "x"}), "info"),
    Scenario(
        "PUT",
        "/api/v2/workers/<string:worker_id>",
        Action.RENAME_WORKER,
        _worker_put({"name": f"authz-renamed-{uuid.uuid4().hex[:8]}"}),
        "name",
    ),
    Scenario("PUT", "/api/v2/workers/<string:worker_id>", Action.SET_WORKER_TEAM, _worker_put({"team": ""}), "team"),
    Scenario(
        "DELETE",
        "/api/v2/workers/<string:worker_id>",
        Action.DELETE_WORKER,
        lambda w, key: w.client.delete(f"/api/v2/workers/{w.worker_id}", headers=_native(key)),
    ),
    Scenario(
        "POST",
        "/api/v2/kudos/transfer",
        Action.TRANSFER_KUDOS,
        lambda w, key: w.client.post(
            "/api/v2/kudos/transfer",
            # To the owner, but from the owner (or its shared key) to the other user: never to oneself.
            json={
                "username": w.other_alias if key in (w.keys["own"], w.keys["shared"]) else w.owner_alias,
                "amount": 1,
            },
            headers=_native(key),
        ),
    ),
    Scenario(
        "POST",
        "/api/v2/sharedkeys",
        Action.CREATE_SHARED_KEY,
        lambda w, key: w.client.post("/api/v2/sharedkeys", json={"kudos": 10}, headers=_native(key)),
    ),
    Scenario(
        "PUT",
        "/api/v2/sharedkeys",
        Action.CREATE_SHARED_KEY,
        lambda w, key: w.client.put("/api/v2/sharedkeys", json={"kudos": 10}, headers=_native(key)),
    ),
    Scenario(
        "PATCH",
        "/api/v2/sharedkeys/<string:sharedkey_id>",
        Action.CHANGE_SHARED_KEY,
        lambda w, key: w.client.patch(
            f"/api/v2/sharedkeys/{w.spare_shared_key}", json={"kudos": 7}, headers=_native(key)
        ),
    ),
    Scenario(
        "DELETE",
        "/api/v2/sharedkeys/<string:sharedkey_id>",
        Action.CHANGE_SHARED_KEY,
        lambda w, key: w.client.delete(f"/api/v2/sharedkeys/{w.spare_shared_key}", headers=_native(key)),
    ),
    # Registration reads no key: whoever calls may register (the per-address limit may answer 429, never the table).
    Scenario(
        "POST",
        "/api/v2/register",
        Action.REGISTER,
        lambda w, key: w.client.post("/api/v2/register", json={"username": "authz"}, headers=_native(key)),
    ),
    Scenario(
        "POST",
        "/register",
        Action.REGISTER,
        lambda w, key: w.client.post("/register", data={"username": "authz"}, headers=_native(key)),
    ),
    Scenario(
        "POST",
        "/api/v2/users/<int:user_id>/api_key",
        Action.ROTATE_API_KEY,
        lambda w, key: w.client.post(f"/api/v2/users/{_id_of(w.owner_alias)}/api_key", headers=_native(key)),
    ),
    # The sign-in session's routes: its cookie and CSRF token decide, never a key (none of the callers holds one:
    # tests/integration/registration/test_sign_in_session.py walks them with a session).
    Scenario(
        "POST",
        "/api/v2/oidc/api_key",
        Action.MANAGE_SIGN_IN,
        lambda w, key: w.client.post("/api/v2/oidc/api_key", headers=_native(key)),
    ),
    Scenario(
        "DELETE",
        "/api/v2/oidc/session",
        Action.MANAGE_SIGN_IN,
        lambda w, key: w.client.delete("/api/v2/oidc/session", headers=_native(key)),
    ),
)


def _id_of(alias: str) -> int:
    return int(alias.rsplit("#", 1)[1])


def _user_put(body: dict) -> Callable[[World, str | None], object]:
    """PUT /users/{id} of the world's owner (the target user)."""
    return lambda w, key: w.client.put(f"/api/v2/users/{w.owner_id}", json=body, headers=_native(key))


def _block_worker_address(w: World, key: str | None) -> object:
    """Block the world's worker's address (the test client's own) and, when that worked, lift it again at once, so
    that the next caller's world is not refused for its address."""
    answer = w.client.put(
        f"/api/v2/operations/block_worker_ipaddr/{w.worker_id}", json={"days": 1}, headers=_native(key)
    )
    w.client.delete(f"/api/v2/operations/block_worker_ipaddr/{w.worker_id}", headers=_native(w.keys["admin"]))
    return answer


MODERATION_SCENARIOS = (
    Scenario("PUT", "/api/v2/users/<string:user_id>", Action.MODIFY_USER, _user_put({"concurrency": 5}), "moderator"),
    Scenario("PUT", "/api/v2/users/<string:user_id>", Action.MODIFY_USER_AS_ADMIN, _user_put({"kudos": 5}), "admin"),
    Scenario(
        "PUT",
        "/api/v2/users/<string:user_id>",
        Action.SET_USER_PROFILE,
        _user_put({"contact": "me@example.com"}),
        "profile",
    ),
    Scenario(
        "DELETE",
        "/api/v2/users/<string:user_id>",
        Action.DELETE_USER,
        lambda w, key: w.client.delete(f"/api/v2/users/{w.owner_id}", headers=_native(key)),
    ),
    Scenario(
        "POST",
        "/api/v2/kudos/award",
        Action.AWARD_KUDOS,
        lambda w, key: w.client.post(
            "/api/v2/kudos/award", json={"username": w.other_alias, "amount": 1}, headers=_native(key)
        ),
    ),
    Scenario(
        "PUT",
        "/api/v2/status/modes",
        Action.SET_MODES,
        lambda w, key: w.client.put("/api/v2/status/modes", json={"invite_only_mode": False}, headers=_native(key)),
    ),
    Scenario(
        "POST",
        "/api/v2/operations/ipaddr",
        Action.TIME_OUT_ADDRESS,
        lambda w, key: w.client.post(
            "/api/v2/operations/ipaddr", json={"ipaddr": "192.0.2.1", "hours": 1}, headers=_native(key)
        ),
    ),
    Scenario(
        "DELETE",
        "/api/v2/operations/ipaddr",
        Action.TIME_OUT_ADDRESS,
        lambda w, key: w.client.delete("/api/v2/operations/ipaddr", json={"ipaddr": "192.0.2.1"}, headers=_native(key)),
    ),
    Scenario(
        "PUT",
        "/api/v2/operations/block_worker_ipaddr/<string:worker_id>",
        Action.BLOCK_WORKER_ADDRESS,
        _block_worker_address,
    ),
    Scenario(
        "DELETE",
        "/api/v2/operations/block_worker_ipaddr/<string:worker_id>",
        Action.BLOCK_WORKER_ADDRESS,
        lambda w, key: w.client.delete(f"/api/v2/operations/block_worker_ipaddr/{w.worker_id}", headers=_native(key)),
    ),
    Scenario(
        "PUT",
        "/api/v2/workers/<string:worker_id>",
        Action.PAUSE_WORKER,
        _worker_put({"paused": True}),
        "paused",
    ),
)
SCENARIOS += MODERATION_SCENARIOS


def _account_read(tail: str) -> Callable[[World, str | None], object]:
    """GET /users/{id}/<tail> of the world's owner: the console's reads of an account (own key or a moderator)."""
    return lambda w, key: w.client.get(f"/api/v2/users/{w.owner_id}/{tail}", headers=_native(key))


#: Reads the table guards too (a user's private account): walked like the changes, not required by the coverage.
READ_SCENARIOS = tuple(
    Scenario("GET", f"/api/v2/users/<string:user_id>/{tail}", Action.VIEW_ACCOUNT, _account_read(tail))
    for tail in ("ledger", "balance_history", "usage", "workers")
)
SCENARIOS += READ_SCENARIOS


def _authorization_refusals(action: Action) -> set[str]:
    """Every rc the table could answer for `action`, whichever the caller."""
    rule = TABLE[action]
    return {refusal(rule, kind).rc for kind in KeyKind if not permits(rule, kind, Role.USER, is_owner=False)}


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda scenario: scenario.name)
def test_each_caller_gets_what_the_table_says(scenario, client, make_user, runtime):
    rule = TABLE[scenario.action]
    seen = {}
    for caller in CALLERS:
        world = _world(client, make_user, runtime)
        answer = scenario.call(world, world.keys[caller])
        status, body = answer.status_code, answer.get_json(silent=True) or {}
        body = body if isinstance(body, dict) else {}  # a list read (the user's workers): no refusal
        rc = body.get("rc") or (body.get("error") or {}).get("code")
        kind, role, is_owner = STANDING[caller]
        seen[caller] = (status, rc)
        if permits(rule, kind, role, is_owner=is_owner):
            assert status != 500, (caller, body)
            assert status not in (401, 403) or rc not in _authorization_refusals(scenario.action), (caller, body)
        else:
            expected = refusal(rule, kind)
            assert (status, rc) == (expected.status, expected.rc), (caller, body)
    assert seen  # every caller was walked


def test_every_state_changing_route_is_walked(app):
    walked = {(scenario.method, scenario.rule) for scenario in SCENARIOS}
    routes = {
        (method, rule.rule) for rule in app.url_map.iter_rules() for method in rule.methods & STATE_CHANGING_METHODS
    }
    assert routes - READ_ONLY - walked == set(), "routes that change state but are not in the authorization walk"
    every = {(method, rule.rule) for rule in app.url_map.iter_rules() for method in rule.methods}
    assert walked - every == set(), "scenarios of routes that do not exist"
