"""No 500 for numbers out of range, nor for a malformed body (issue 38), on both databases.

Every number a native payload takes has a maximum that fits where it lands (a column, a worker's sampler): the test
walks each native schema's integer and float fields, posts 2^31, 2^63 and 10^30 to the route that takes it, and
expects a value above the field's maximum to be 400 BadRequest naming the field, with nothing stored. Every native
route that takes a body (POST, PUT, PATCH) answers one that is not JSON, not an object, or a string where an object
belongs with 400 and no traceback in the log. The OpenAI front's dialects screen their own numbers: 400, or, for
the token limits Messages and Responses lower to the Horde's ceiling, on to the next check.
"""

from __future__ import annotations

import itertools
import logging
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest
from marshmallow import Schema, fields, validate
from sqlalchemy import select

from horde.accounts import names
from horde.accounts.schemas import SHARED_KEY_INPUT_SCHEMA, TRANSFER_SCHEMA
from horde.chat.schemas import CHAT_REQUEST_SCHEMA
from horde.moderation.schemas import (
    ADD_TIMEOUT_SCHEMA,
    AWARD_SCHEMA,
    BLOCK_WORKER_SCHEMA,
    MODES_INPUT_SCHEMA,
    MODIFY_USER_SCHEMA,
)
from horde.registration.schemas import REGISTER_SCHEMA
from horde.registry.schemas import MODIFY_WORKER_SCHEMA
from horde.storage.database import Base
from horde.text.schemas import GENERATION_INPUT_SCHEMA
from horde.text.schemas import POP_SCHEMA as TEXT_POP_SCHEMA
from horde.text.schemas import SUBMIT_SCHEMA as TEXT_SUBMIT_SCHEMA
from horde.workers.schemas import FAULT_SCHEMA, POP_SCHEMA, PROGRESS_SCHEMA, SUBMIT_SCHEMA
from tests.support.moderation import with_role
from tests.support.native import declaration, pop, queued_id
from tests.support.text_api import text_pop, text_queued

HUGE_NUMBERS = (2**31, 2**63, 10**30)
NATIVE_PREFIX = "/api/v2"
MALFORMED_BODIES = (b"{", b"not json", b'"a string"', b"[1, 2]", b"42", b"null", b"\xff\xfe")
#: A token limit these dialects' clients send as their model's maximum: above the Horde's ceiling it is lowered,
#: not refused (docs/reference/chat_front.md, Named parameters).
LOWERED = {("/v1/messages", "max_tokens"), ("/v1/responses", "max_output_tokens")}
#: The OpenAI front's dialects: a valid body and the numbers each takes (a key of `horde` is a dotted path).
DIALECTS = {
    "/v1/chat/completions": (
        {"model": "m1", "messages": [{"role": "user", "content": "Hi"}]},
        ("max_tokens", "max_completion_tokens", "n", "seed", "top_logprobs", "horde.max_kudos"),
    ),
    #: horde.max_kudos is no text field: the front compares it with the estimate, and a larger one limits nothing.
    "/v1/completions": ({"model": "m1", "prompt": "Hi"}, ("max_tokens", "n", "seed", "best_of")),
    "/v1/responses": ({"model": "m1", "input": "Hi"}, ("max_output_tokens", "seed", "top_logprobs", "horde.max_kudos")),
    "/v1/messages": (
        {"model": "m1", "max_tokens": 64, "messages": [{"role": "user", "content": "Hi"}]},
        ("max_tokens", "top_k", "seed", "horde.max_kudos"),
    ),
}


class Context:
    """The keys, running jobs, shared key and user names the routes' valid bodies name."""

    def __init__(self, client, make_user, runtime):
        owner, self.owner = make_user()
        requester, self.requester = make_user(kudos=1000)
        self.user_id = requester.id
        self.admin = with_role(runtime, make_user, "admin")[1]
        self.owner_alias = names.alias(owner.username, owner.id, anonymous=False)
        pop(client, self.owner, name="numbers-chat", max_length=1024, max_context_length=8192)
        queued_id(client, self.requester)
        self.chat_job = pop(client, self.owner, name="numbers-chat", max_length=1024, max_context_length=8192)["id"]
        text_pop(client, self.owner, name="numbers-text")
        text_queued(client, self.requester)
        self.text_job = text_pop(client, self.owner, name="numbers-text")["id"]
        self.shared_key = client.post(NATIVE_PREFIX + "/sharedkeys", json={}, headers={"apikey": self.requester}).json
        self.worker = client.get(NATIVE_PREFIX + "/workers/name/numbers-chat").json
        assert self.chat_job and self.text_job and self.shared_key["id"] and self.worker["id"]


@dataclass(frozen=True)
class Route:
    """A native route that takes a body: its method, its rule (as the app names it, under /api/v2), its schema,
    whose key it takes (a Context attribute) and a valid body."""

    method: str
    rule: str
    schema: Schema
    key: str
    valid: Callable[[Context], dict]
    #: An empty body (or JSON null) is the default of every field: not malformed.
    empty_is_valid: bool = False

    def url(self, context: Context) -> str:
        ids = {
            "<string:sharedkey_id>": context.shared_key["id"],
            "<string:worker_id>": context.worker["id"],
            "<string:user_id>": str(context.user_id),
        }
        return NATIVE_PREFIX + re.sub(r"<string:\w+>", lambda found: ids[found.group()], self.rule)

    def __str__(self) -> str:
        return f"{self.method} {self.rule}"


ROUTES = [
    Route(
        "POST",
        "/generate/chat/async",
        CHAT_REQUEST_SCHEMA,
        "requester",
        lambda ctx: {"model": "m1", "messages": [{"role": "user", "content": "Hi"}]},
    ),
    Route("POST", "/generate/chat/pop", POP_SCHEMA, "owner", lambda ctx: declaration("numbers-new")),
    Route(
        "POST", "/generate/chat/progress", PROGRESS_SCHEMA, "owner", lambda ctx: {"id": ctx.chat_job, "content": "H"}
    ),
    Route(
        "POST",
        "/generate/chat/submit",
        SUBMIT_SCHEMA,
        "owner",
        lambda ctx: {"id": ctx.chat_job, "content": "Hi", "usage": {}, "pop": declaration("numbers-chat")},
    ),
    Route(
        "POST",
        "/generate/chat/fault",
        FAULT_SCHEMA,
        "owner",
        lambda ctx: {"id": ctx.chat_job, "reason": "x", "pop": declaration("numbers-chat")},
    ),
    Route(
        "POST",
        "/generate/text/async",
        GENERATION_INPUT_SCHEMA,
        "requester",
        lambda ctx: {"prompt": "Once", "models": ["m1"], "params": {}},
    ),
    Route(
        "POST",
        "/generate/text/pop",
        TEXT_POP_SCHEMA,
        "owner",
        lambda ctx: {"name": "numbers-new-text", "models": ["m1"]},
    ),
    Route(
        "POST",
        "/generate/text/submit",
        TEXT_SUBMIT_SCHEMA,
        "owner",
        lambda ctx: {"id": ctx.text_job, "generation": "x"},
    ),
    Route(
        "POST", "/kudos/transfer", TRANSFER_SCHEMA, "requester", lambda ctx: {"username": ctx.owner_alias, "amount": 1}
    ),
    Route("POST", "/sharedkeys", SHARED_KEY_INPUT_SCHEMA, "requester", lambda ctx: {}, empty_is_valid=True),
    Route("PUT", "/sharedkeys", SHARED_KEY_INPUT_SCHEMA, "requester", lambda ctx: {}, empty_is_valid=True),
    Route("PUT", "/workers/<string:worker_id>", MODIFY_WORKER_SCHEMA, "owner", lambda ctx: {"info": "numbers"}),
    Route("PUT", "/users/<string:user_id>", MODIFY_USER_SCHEMA, "admin", lambda ctx: {"concurrency": 3}),
    Route("PUT", "/status/modes", MODES_INPUT_SCHEMA, "admin", lambda ctx: {"invite_only_mode": False}),
    Route("POST", "/kudos/award", AWARD_SCHEMA, "admin", lambda ctx: {"username": ctx.owner_alias, "amount": 1}),
    Route("POST", "/operations/ipaddr", ADD_TIMEOUT_SCHEMA, "admin", lambda ctx: {"ipaddr": "192.0.2.1", "hours": 1}),
    Route(
        "PUT",
        "/operations/block_worker_ipaddr/<string:worker_id>",
        BLOCK_WORKER_SCHEMA,
        "admin",
        lambda ctx: {"days": 1},
    ),
    Route(
        "PATCH",
        "/sharedkeys/<string:sharedkey_id>",
        SHARED_KEY_INPUT_SCHEMA,
        "requester",
        lambda ctx: {"name": "numbers"},
        empty_is_valid=True,
    ),
    Route("POST", "/register", REGISTER_SCHEMA, "requester", lambda ctx: {"username": "numbers"}),
]
#: POSTs that read no body: a new API key (the caller's key, or the sign-in session, says whose).
POSTS_WITHOUT_A_BODY = {"POST /users/<int:user_id>/api_key", "POST /oidc/api_key"}


def numeric_fields(schema: Schema, path: tuple = ()) -> Iterator[tuple[tuple, fields.Field]]:
    """(path, field) of every integer and float a body of `schema` may hold; a path's int is a list's index."""
    for name, field in schema.fields.items():
        key = path + (field.data_key or name,)
        if isinstance(field, fields.Number):
            yield key, field
        elif isinstance(field, fields.Nested):
            yield from numeric_fields(field.schema, key)
        elif isinstance(field, fields.List) and isinstance(field.inner, fields.Number):
            yield key + (0,), field.inner
        elif isinstance(field, fields.List) and isinstance(field.inner, fields.Nested):
            yield from numeric_fields(field.inner.schema, key + (0,))


def nested_fields(schema: Schema, path: tuple = ()) -> Iterator[tuple]:
    """The path of every object (and list of objects) a body of `schema` may hold."""
    for name, field in schema.fields.items():
        key = path + (field.data_key or name,)
        if isinstance(field, (fields.Nested, fields.Dict)):
            yield key
            if isinstance(field, fields.Nested):
                yield from nested_fields(field.schema, key)
        elif _holds_objects(field):
            yield key
            yield key + (0,)


def _holds_objects(field: fields.Field) -> bool:
    """A list of objects: a List of Nested or Dict, or chat's ObjectList (`messages`)."""
    if isinstance(field, fields.List):
        return isinstance(field.inner, (fields.Nested, fields.Dict))
    return getattr(field, "json_schema", {}).get("items", {}).get("type") == "object"


def maximum(field: fields.Field) -> float | None:
    ranges = [rule for rule in field.validators if isinstance(rule, validate.Range)]
    return min((rule.max for rule in ranges if rule.max is not None), default=None)


def param(path: tuple) -> str:
    """The path as the native refusal names it: `params.seed`, `params.sampler_order[0]`."""
    text = ""
    for key in path:
        text += f"[{key}]" if isinstance(key, int) else (f".{key}" if text else key)
    return text


def with_value(body: dict, path: tuple, value: object) -> dict:
    """A copy of `body` with `value` at `path` (creating the objects and lists on the way)."""
    body = dict(body)
    node: dict | list = body
    for key, next_key in itertools.pairwise(path):
        child = node[key] if isinstance(node, list) or key in node else None
        child = (
            (dict(child) if isinstance(child, dict) else list(child))
            if child
            else ({} if isinstance(next_key, str) else [])
        )
        if isinstance(node, list):
            node.append(child)
        else:
            node[key] = child
        node = child
    if isinstance(node, list):
        node[:] = [value]
    else:
        node[path[-1]] = value
    return body


def stored(runtime) -> dict[str, list]:
    """Every row of every table: what a refused call must leave as it was."""
    with runtime.db.read() as session:
        return {
            table.name: sorted(map(repr, session.execute(select(table)).all())) for table in Base.metadata.sorted_tables
        }


def no_traceback(caplog) -> None:
    logged = [record for record in caplog.records if record.exc_info or "Traceback" in record.getMessage()]
    assert not logged, [record.getMessage()[:200] for record in logged]


def test_every_native_number_has_a_maximum():
    unbounded = [
        f"{route} {param(path)}"
        for route in ROUTES
        for path, field in numeric_fields(route.schema)
        if maximum(field) is None
    ]
    assert not unbounded


def test_the_routes_cover_every_native_route_that_takes_a_body(app):
    native = {
        f"{method} {rule.rule.removeprefix(NATIVE_PREFIX)}"
        for rule in app.url_map.iter_rules()
        if rule.rule.startswith(NATIVE_PREFIX)
        for method in (rule.methods or set()) & {"POST", "PUT", "PATCH"}
    }
    assert native == {str(route) for route in ROUTES} | POSTS_WITHOUT_A_BODY


@pytest.mark.parametrize("route", ROUTES, ids=str)
def test_numbers_out_of_range_are_refused_naming_the_field_and_store_nothing(route, client, make_user, runtime, caplog):
    context = Context(client, make_user, runtime)
    refused = 0
    for path, field in numeric_fields(route.schema):
        for value in HUGE_NUMBERS:
            before = stored(runtime)
            body = with_value(route.valid(context), path, value)
            answer = client.open(
                route.url(context), method=route.method, json=body, headers={"apikey": getattr(context, route.key)}
            )
            limit = maximum(field)
            if limit is None or value > limit:  # a field without a maximum must refuse them all
                assert answer.status_code == 400, (param(path), value, answer.json)
                assert answer.json["rc"] == "BadRequest" and answer.json["param"] == param(path), answer.json
                assert param(path) in answer.json["message"]
                assert stored(runtime) == before, (param(path), value)
                refused += 1
            else:  # a seed of 2^31 is a seed
                assert answer.status_code < 500 and answer.json.get("param") != param(path), answer.json
    assert refused or not list(numeric_fields(route.schema))
    no_traceback(caplog)


@pytest.mark.parametrize("route", ROUTES, ids=str)
def test_a_malformed_body_is_400_without_a_traceback(route, client, make_user, runtime, caplog):
    context = Context(client, make_user, runtime)
    headers = {"apikey": getattr(context, route.key), "Content-Type": "application/json"}
    before = stored(runtime)
    bodies = [{"data": raw} for raw in MALFORMED_BODIES if not (route.empty_is_valid and raw == b"null")]
    # A string where an object (or a list of objects) belongs.
    bodies += [{"json": with_value(route.valid(context), path, "x")} for path in nested_fields(route.schema)]
    answers = [client.open(route.url(context), method=route.method, headers=headers, **body) for body in bodies]
    assert [(answer.status_code, answer.json["rc"]) for answer in answers] == [(400, "BadRequest")] * len(answers)
    assert stored(runtime) == before
    no_traceback(caplog)


def test_priority_usernames_with_ids_no_user_can_have_are_ignored(client, make_user, caplog):
    """The text pop's "name#id": an id beyond the users' key, or digits that are not ASCII, name no user."""
    _, owner = make_user()
    caplog.set_level(logging.WARNING)
    for usernames in (["someone#99999999999999999999"], ["someone#" + str(2**31)], ["someone#²"]):
        text_pop(client, owner, priority_usernames=usernames)
    no_traceback(caplog)


@pytest.mark.parametrize("path", sorted(DIALECTS))
def test_the_front_refuses_numbers_out_of_range(path, client, make_user, caplog):
    """A number the front takes past its screening meets the model's refusal (no worker ever served it), so that
    nothing waits: a number refused is 400, a token limit lowered goes on to the 404."""
    _, key = make_user(kudos=1000)
    valid, numbers = DIALECTS[path]
    for name in numbers:
        for value in (2**63, 10**30):
            body = with_value(dict(valid, model="numbers/never-served"), tuple(name.split(".")), value)
            answer = client.post(path, json=body, headers={"Authorization": f"Bearer {key}"})
            expected = 404 if (path, name) in LOWERED else 400
            assert answer.status_code == expected, (name, value, answer.json)
    no_traceback(caplog)
