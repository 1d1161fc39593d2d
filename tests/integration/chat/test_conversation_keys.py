"""Each dialect names its conversation (horde/oai/conversation.py): prompt_cache_key and session_id (chat,
Responses), the session headers, Claude Code's session (Messages), previous_response_id's conversation; a key
above its bound is refused with its param, and nothing is queued."""

from __future__ import annotations

import json
import threading

import pytest
from sqlalchemy import func, select

from horde.chat import conversation
from horde.chat.models import ChatRequest
from tests.support.native import pop, submit

MESSAGES = [{"role": "user", "content": "Hello"}]


def _serve(client, key, jobs):
    for _ in range(jobs):
        job = pop(client, key, wait=5)
        if job["id"]:
            submit(client, key, job["id"])


@pytest.fixture
def served(client, make_user):
    """A worker that answers the next `jobs` requests, and a client's (user id, key)."""
    _, owner = make_user("owner")
    pop(client, owner)
    threads = []

    def answer(jobs: int = 1):
        thread = threading.Thread(target=_serve, args=(client.application.test_client(), owner, jobs))
        thread.start()
        threads.append(thread)

    yield answer, make_user("client")
    for thread in threads:
        thread.join(timeout=30)


def _latest_key(runtime) -> str:
    with runtime.db.read() as session:
        return session.scalar(select(ChatRequest.conversation_key).order_by(ChatRequest.created_at.desc()).limit(1))


def _count(runtime) -> int:
    with runtime.db.read() as session:
        return session.scalar(select(func.count()).select_from(ChatRequest)) or 0


def _post(client, path, key, body, **headers):
    headers = {"Authorization": f"Bearer {key}", "anthropic-version": "2023-06-01", **headers}
    return client.post(path, json=body, headers=headers)


@pytest.mark.parametrize(
    ("body", "headers", "named"),
    [
        ({"prompt_cache_key": "pck"}, {}, "pck"),
        ({"prompt_cache_key": "pck", "session_id": "sid"}, {"x-session-id": "hdr"}, "pck"),
        ({"session_id": "sid"}, {"x-session-id": "hdr"}, "sid"),
        ({}, {"x-session-id": "hdr"}, "hdr"),
    ],
)
def test_chat_completions_name_the_conversation(runtime, client, served, body, headers, named):
    answer, (user, key) = served
    answer()
    response = _post(client, "/v1/chat/completions", key, {"model": "m1", "messages": MESSAGES, **body}, **headers)
    assert response.status_code == 200, response.json
    assert _latest_key(runtime) == conversation.scoped(user.id, named)


def test_messages_name_claude_codes_session(runtime, client, served):
    answer, (user, key) = served
    answer(2)
    body = {"model": "m1", "max_tokens": 64, "messages": MESSAGES}
    metadata = {"user_id": json.dumps({"device_id": "d", "account_uuid": "a", "session_id": "s-1"})}
    assert _post(client, "/v1/messages", key, body | {"metadata": metadata}).status_code == 200
    assert _latest_key(runtime) == conversation.scoped(user.id, "s-1")
    assert _post(client, "/v1/messages", key, body, **{"X-Claude-Code-Session-Id": "s-2"}).status_code == 200
    assert _latest_key(runtime) == conversation.scoped(user.id, "s-2")


def test_a_response_continues_the_conversation_of_its_previous_response(runtime, client, served):
    answer, (user, key) = served
    answer(2)
    first = _post(client, "/v1/responses", key, {"model": "m1", "input": "Hello", "prompt_cache_key": "codex-1"})
    assert first.status_code == 200, first.json
    assert _latest_key(runtime) == conversation.scoped(user.id, "codex-1")
    follow = _post(
        client, "/v1/responses", key, {"model": "m1", "input": "More", "previous_response_id": first.json["id"]}
    )
    assert follow.status_code == 200, follow.json
    assert _latest_key(runtime) == conversation.scoped(user.id, "codex-1")


def test_a_keyless_request_gets_the_key_of_its_leading_messages(runtime, client, served):
    answer, (user, key) = served
    answer()
    assert _post(client, "/v1/chat/completions", key, {"model": "m1", "messages": MESSAGES}).status_code == 200
    assert _latest_key(runtime) == conversation.of_request(user.id, {"messages": MESSAGES})


@pytest.mark.parametrize(
    ("path", "body", "headers", "param"),
    [
        ("/v1/chat/completions", {"messages": MESSAGES, "prompt_cache_key": "k" * 1025}, {}, "prompt_cache_key"),
        ("/v1/chat/completions", {"messages": MESSAGES, "prompt_cache_key": 7}, {}, "prompt_cache_key"),
        ("/v1/chat/completions", {"messages": MESSAGES, "session_id": ""}, {}, "session_id"),
        ("/v1/chat/completions", {"messages": MESSAGES}, {"x-session-id": "k" * 1025}, "x-session-id"),
        ("/v1/responses", {"input": "Hello", "prompt_cache_key": "k" * 1025}, {}, "prompt_cache_key"),
    ],
)
def test_a_key_above_its_bound_is_refused_with_its_param(runtime, client, make_user, path, body, headers, param):
    _, key = make_user("client")
    pop(client, key)
    response = _post(client, path, key, {"model": "m1", **body}, **headers)
    assert response.status_code == 400, response.json
    assert response.json["error"]["param"] == param
    assert _count(runtime) == 0
