"""A worker gets a job only when it declares every requirement and guarantee, fits, and passes restrictions."""

import pytest

from tests.support.native import ALL_FEATURES, ALL_GUARANTEES, pop, queue, queued_id

TOOLS = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {}}}}]
STRICT_SCHEMA = {
    "type": "json_schema",
    "json_schema": {
        "name": "s",
        "strict": True,
        "schema": {
            "type": "object",
            "properties": {"a": {"type": "integer"}},
            "required": ["a"],
            "additionalProperties": False,
        },
    },
}
IMAGE = "data:image/png;base64,iVBORw0KGgo="

REQUIREMENTS = [
    ("seed", {"seed": 7}, "features"),
    ("reasoning_effort", {"reasoning_effort": "low"}, "features"),
    ("frequency_penalty", {"frequency_penalty": 0.5}, "features"),
    ("presence_penalty", {"presence_penalty": -0.5}, "features"),
    (
        "vision",
        {
            "messages": [
                {
                    "role": "user",
                    "content": [{"type": "text", "text": "see"}, {"type": "image_url", "image_url": {"url": IMAGE}}],
                }
            ]
        },
        "features",
    ),
    ("tools", {"tools": TOOLS}, "features"),
    ("json_object", {"response_format": {"type": "json_object"}}, "features"),
    (
        "json_schema",
        {"response_format": {"type": "json_schema", "json_schema": {"name": "s", "schema": {}}}},
        "features",
    ),
    ("tools_with_response_format", {"tools": TOOLS, "response_format": {"type": "json_object"}}, "features"),
    ("tool_choice", {"tools": TOOLS, "tool_choice": "required"}, "guarantees"),
    ("tool_choice", {"tools": TOOLS, "tool_choice": {"type": "function", "function": {"name": "f"}}}, "guarantees"),
    ("schema_adherence", {"response_format": STRICT_SCHEMA}, "guarantees"),
    ("prompt_fit", {"context_fitting": "reject"}, "guarantees"),
]


@pytest.mark.parametrize("name, body, kind", REQUIREMENTS)
def test_each_requirement_routes_only_to_declaring_workers(client, make_user, name, body, kind):
    _, owner = make_user("owner")
    features = [f for f in ALL_FEATURES if not (kind == "features" and f == name)]
    guarantees = [g for g in ALL_GUARANTEES if not (kind == "guarantees" and g == name)]
    lacking = dict(features=features, guarantees=guarantees)
    full = dict(features=ALL_FEATURES, guarantees=ALL_GUARANTEES)
    pop(client, owner, "full", **full)
    pop(client, owner, "lacking", **lacking)
    queued_id(client, owner, **body)

    skipped = pop(client, owner, "lacking", **lacking)
    assert skipped["id"] is None
    assert skipped["skipped"] == {kind: 1}
    assert pop(client, owner, "full", **full)["id"] is not None


def test_penalty_at_zero_and_tool_choice_none_need_nothing(client, make_user):
    _, owner = make_user("owner")
    pop(client, owner, "plain")
    queued_id(client, owner, frequency_penalty=0, presence_penalty=0, tools=TOOLS, tool_choice="none")
    job = pop(client, owner, "plain")
    assert job["id"] is not None
    assert "tools" not in job["payload"]


def test_best_effort_drops_guarantees_but_not_features(client, make_user):
    _, owner = make_user("owner")
    pop(client, owner, "tools-only", features=["tools"])
    queued_id(client, owner, tools=TOOLS, tool_choice="required", conformance="best_effort")
    assert pop(client, owner, "tools-only", features=["tools"])["id"] is not None


def test_length_and_context_limits(client, make_user):
    _, owner = make_user("owner")
    pop(client, owner, "big", max_length=2048, max_context_length=16384)
    pop(client, owner, "small", max_length=256, max_context_length=1024)
    queued_id(client, owner, max_tokens=1024)
    assert pop(client, owner, "small", max_length=256, max_context_length=1024)["skipped"] == {"max_length": 1}
    assert pop(client, owner, "big", max_length=2048, max_context_length=16384)["id"] is not None


def test_temperature_limit_with_tools(client, make_user):
    _, owner = make_user("owner")
    limited = dict(features=["tools"], limits={"max_temperature_with_tools": 1.0})
    pop(client, owner, "limited", **limited)
    response = queue(client, owner, tools=TOOLS, temperature=1.5)
    assert response.status_code == 404
    assert response.json["rc"] == "no_worker_supports_features"
    pop(client, owner, "free", features=["tools"])
    queued_id(client, owner, tools=TOOLS, temperature=1.5)
    assert pop(client, owner, "limited", **limited)["skipped"] == {"limits": 1}
    assert pop(client, owner, "free", features=["tools"])["id"] is not None


def test_only_list_and_trusted_workers(client, make_user):
    _, owner = make_user("owner")
    _, trusted_owner = make_user("trusted-owner", trusted=True)
    pop(client, owner, "untrusted")
    pop(client, trusted_owner, "trusted")
    queued_id(client, owner, trusted_workers=True)
    assert pop(client, owner, "untrusted")["skipped"] == {"untrusted": 1}
    assert pop(client, trusted_owner, "trusted")["id"] is not None

    worker_id = _worker_id(client, "untrusted")
    queued_id(client, owner, only=[worker_id])
    assert pop(client, trusted_owner, "trusted")["skipped"] == {"worker_id": 1}
    assert pop(client, owner, "untrusted")["id"] is not None


def test_threads_are_honoured(client, make_user):
    _, owner = make_user("owner")
    pop(client, owner, "one-thread", threads=1)
    queued_id(client, owner)
    queued_id(client, owner)
    assert pop(client, owner, "one-thread", threads=1)["id"] is not None
    assert pop(client, owner, "one-thread", threads=1) == {"id": None, "skipped": {"threads": 1}}


def test_other_models_are_skipped_by_model(client, make_user):
    _, owner = make_user("owner")
    pop(client, owner, "a", models=["m1"])
    pop(client, owner, "b", models=["m2"])
    queued_id(client, owner, model="m1")
    assert pop(client, owner, "b", models=["m2"])["skipped"] == {"models": 1}


def _worker_id(client, name):
    from sqlalchemy import select

    from horde.workers.models import Worker

    runtime = client.application.extensions["horde"]
    with runtime.db.transaction() as session:
        return session.scalar(select(Worker.id).where(Worker.name == name))
