"""The AI Horde's status and meta endpoints: performance, news, modes, teams, image stats, and model and worker types
that its clients can parse (text or image; this Horde's chat only when asked for)."""

from __future__ import annotations

import json
import os

import pytest

from tests.support.native import pop, queued_id, submit
from tests.support.text_api import text_pop, text_queued, text_submit

IMAGE_FIELDS = (
    "queued_requests",
    "worker_count",
    "thread_count",
    "queued_megapixelsteps",
    "past_minute_megapixelsteps",
    "queued_forms",
    "interrogator_count",
    "interrogator_thread_count",
)


def test_performance_counts_the_text_queue_workers_and_the_last_minutes_tokens(client, make_user):
    _, owner = make_user()
    _, key = make_user(kudos=1000)
    text_pop(client, owner, "tw1", threads=3)
    text_pop(client, owner, "tw2", threads=2)
    pop(client, owner, "chat-only")  # a chat worker: not one the AI Horde's text clients are served by
    text_queued(client, key, params={"max_length": 40})
    served = text_pop(client, owner, "tw1", threads=3)
    assert text_submit(client, owner, served["id"], "z" * 40).status_code == 200  # 10 tokens, as the Horde counts
    queued_id(client, key)
    chat_job = pop(client, owner, "chat-only")
    submit(client, owner, chat_job["id"], usage={"completion_tokens": 7})
    text_queued(client, key, params={"n": 2, "max_length": 80})
    text_queued(client, key, params={"max_length": 100})
    text_pop(client, owner, "tw2", threads=2)  # one of the three waiting generations now runs

    figures = client.get("/api/v2/status/performance").json
    assert figures["queued_text_requests"] == 3  # waiting or running
    assert figures["queued_tokens"] == 80 + 80 + 100
    assert (figures["text_worker_count"], figures["text_thread_count"]) == (2, 5)
    assert figures["past_minute_tokens"] == 10 + 7  # text and chat together
    assert {name: figures[name] for name in IMAGE_FIELDS} == dict.fromkeys(IMAGE_FIELDS, 0)


def test_news_are_the_operators_file_newest_first(client, runtime, tmp_path):
    news = tmp_path / "news.json"
    pieces = [
        {"date_published": "2026-01-02", "newspiece": "Older.", "importance": "Information"},
        {"date_published": "2026-03-04", "newspiece": "Newer.", "importance": "Workers", "tags": ["text"], "x": 1},
    ]
    news.write_text(json.dumps(pieces))
    runtime.settings = runtime.settings.replace(news_path=str(news))
    assert [piece["newspiece"] for piece in client.get("/api/v2/status/news").json] == ["Newer.", "Older."]
    assert client.get("/api/v2/status/news").json[0]["tags"] == ["text"]
    news.write_text('{"not": "a list"}')
    os.utime(news, (news.stat().st_mtime + 1,) * 2)  # a change the next read sees, however fast the test runs
    assert client.get("/api/v2/status/news").json == []  # logged; the clients still get an answer


def test_no_news_without_a_file_and_the_modes_teams_and_image_stats_are_empty(client):
    assert client.get("/api/v2/status/news").json == []
    # Raid mode only to a moderator (tests/integration/moderation/test_modes.py).
    assert client.get("/api/v2/status/modes").json == {"maintenance_mode": False, "invite_only_mode": False}
    assert client.get("/api/v2/teams").json == []
    missing = client.get("/api/v2/teams/0bed257b-e57c-4327-ac64-40cdfb1ac5e6")
    assert (missing.status_code, missing.json["rc"]) == (404, "TeamNotFound")
    totals = client.get("/api/v2/stats/img/totals").json
    assert totals == {period: {"images": 0, "ps": 0} for period in ("minute", "hour", "day", "month", "total")}
    assert client.get("/api/v2/stats/img/models").json == {"day": {}, "month": {}, "total": {}}


def test_model_types_are_the_ai_hordes_and_chat_only_when_asked_for(client, make_user):
    _, owner = make_user()
    text_pop(client, owner, "tw1", models=["both", "text-only"])
    pop(client, owner, "cw1", models=["both", "chat-only"])
    assert client.get("/api/v2/status/models").json == []  # the AI Horde's default type is image
    assert client.get("/api/v2/status/models?type=image").json == []
    text = client.get("/api/v2/status/models?type=text").json
    assert [(entry["name"], entry["type"]) for entry in text] == [("both", "text"), ("text-only", "text")]
    chat = client.get("/api/v2/status/models?type=chat").json  # the chat entries: features, guarantees, workers
    assert [(entry["name"], entry["type"], "features" in entry) for entry in chat] == [
        ("both", "text", True),
        ("chat-only", "text", True),
    ]
    assert [("features" in entry) for entry in client.get("/api/v2/status/models/both").json] == [False]
    assert client.get("/api/v2/status/models/chat-only").json == []
    assert [entry["worker_names"] for entry in client.get("/api/v2/status/models/chat-only?type=chat").json] == [
        ["cw1"]
    ]
    refused = client.get("/api/v2/status/models?type=video")
    assert (refused.status_code, refused.json["rc"], refused.json["param"]) == (400, "BadRequest", "type")


def test_workers_without_a_type_are_the_ai_hordes_kinds(client, make_user):
    _, owner = make_user()
    text_pop(client, owner, "text-worker")
    pop(client, owner, "chat-worker")
    assert [(w["name"], w["type"]) for w in client.get("/api/v2/workers").json] == [("text-worker", "text")]
    assert [w["name"] for w in client.get("/api/v2/workers?type=chat").json] == ["chat-worker"]
    assert client.get("/api/v2/workers?type=image").json == []


@pytest.mark.parametrize(
    ("method", "path", "status", "rc"),
    [
        ("GET", "/api/v2/generate/text/status/", 404, "NotFound"),
        ("GET", "/api/v2/no/such/endpoint", 404, "NotFound"),
        ("GET", "/api", 404, "NotFound"),
        ("GET", "/api/v1/generate/text/async", 404, "NotFound"),
        ("POST", "/api/v2/generate/async", 404, "NotFound"),
        ("PUT", "/api/v2/workers", 405, "MethodNotAllowed"),
        ("POST", "/api/v2/generate/text/status/abc", 405, "MethodNotAllowed"),
        ("GET", "/api/v2/generate/text/pop", 405, "MethodNotAllowed"),
        ("PATCH", "/api/v2/status/heartbeat", 405, "MethodNotAllowed"),
    ],
)
def test_every_answer_under_api_is_json(client, method, path, status, rc):
    answer = client.open(path, method=method)
    assert (answer.status_code, answer.content_type) == (status, "application/json")
    assert answer.json["rc"] == rc and path in answer.json["message"]
    if status == 405:
        assert method not in answer.headers["Allow"] and "OPTIONS" in answer.headers["Allow"]


def test_paths_outside_api_answer_as_before(client):
    assert client.get("/no/such/page").content_type.startswith("text/html")
    front = client.get("/v1/no-such-endpoint")
    assert front.status_code == 404 and front.json["error"]["code"] == "unsupported_endpoint"
