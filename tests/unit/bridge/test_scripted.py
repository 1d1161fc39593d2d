"""The scripted backend: replies, auto tool calls and JSON, progress steps, cancel and fault."""

import json

import jsonschema
import pytest

from horde.bridge.backends.scripted import ScriptedBackend, auto_tool_call, build_reply
from horde.bridge.context import JobContext
from horde.bridge.job import Job, JobCancelled, JobFault
from horde.bridge.rules import parse_rules

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {
            "type": "object",
            "required": ["city", "unit"],
            "additionalProperties": False,
            "properties": {
                "city": {"type": "string"},
                "unit": {"type": "string", "enum": ["c", "f"]},
                "days": {"type": "integer"},
            },
        },
    },
}
SEARCH = {
    "type": "function",
    "function": {
        "name": "search",
        "parameters": {
            "type": "object",
            "required": ["query", "filters"],
            "properties": {
                "query": {"type": "string", "minLength": 1},
                "filters": {
                    "type": "array",
                    "minItems": 1,
                    "items": {
                        "type": "object",
                        "required": ["field", "op"],
                        "properties": {"field": {"type": "string"}, "op": {"enum": ["eq", "lt"]}},
                    },
                },
            },
        },
    },
}
NO_PARAMS = {"type": "function", "function": {"name": "now"}}
SCHEMA = {
    "type": "object",
    "required": ["answer", "score", "tags"],
    "additionalProperties": False,
    "properties": {
        "answer": {"type": "string"},
        "score": {"type": "number", "minimum": 1},
        "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1},
    },
}


def make_job(text="hello", **payload):
    return Job(
        id="job-1", model="test/model", ttl_s=150, payload={"messages": [{"role": "user", "content": text}], **payload}
    )


class StubClient:
    """Stands in for the Horde client: records progress posts, answers cancel on request."""

    def __init__(self, cancel_after=None):
        self.posts = []
        self.cancel_after = cancel_after

    def progress(self, job_id, content, reasoning_content):
        self.posts.append((content, reasoning_content))
        return self.cancel_after is not None and len(self.posts) >= self.cancel_after


def run(rules, job, client=None, progress=True):
    ctx = JobContext(job, client or StubClient(), progress_enabled=progress)
    return ScriptedBackend(parse_rules({"rules": rules})).generate(job, ctx), ctx


def test_content_template_and_default_finish_and_usage():
    reply, _ = run([{"match": {}, "reply": {"content": "echo: {last_user}"}}], make_job("abcdefgh"))
    assert reply.content == "echo: abcdefgh"
    assert reply.finish_reason == "stop"
    assert reply.usage == {"prompt_tokens": 2, "completion_tokens": 4}
    assert reply.submit_body("job-1") == {
        "id": "job-1",
        "content": "echo: abcdefgh",
        "finish_reason": "stop",
        "usage": {"prompt_tokens": 2, "completion_tokens": 4},
    }


def test_reasoning_usage_and_override():
    spec = {"content": "1234", "reasoning_content": "12345678", "usage": {"completion_tokens": 99}}
    reply = build_reply(spec, make_job())
    assert reply.reasoning_content == "12345678"
    assert reply.usage == {"prompt_tokens": 2, "completion_tokens": 99, "reasoning_tokens": 2}
    assert reply.submit_body("j")["reasoning_content"] == "12345678"


def test_auto_tool_call_uses_the_first_tool_with_valid_arguments():
    reply = build_reply({"tool_calls": "auto"}, make_job(tools=[WEATHER, SEARCH]))
    assert reply.finish_reason == "tool_calls"
    assert reply.content is None
    (call,) = reply.tool_calls
    assert call["type"] == "function" and call["id"].startswith("call_")
    assert call["function"]["name"] == "get_weather"
    arguments = json.loads(call["function"]["arguments"])
    jsonschema.validate(arguments, WEATHER["function"]["parameters"])
    assert arguments == {"city": "example", "unit": "c"}


def test_auto_tool_call_honours_a_forced_function():
    job = make_job(tools=[WEATHER, SEARCH], tool_choice={"type": "function", "function": {"name": "search"}})
    call = auto_tool_call(job)
    assert call["function"]["name"] == "search"
    jsonschema.validate(json.loads(call["function"]["arguments"]), SEARCH["function"]["parameters"])


def test_auto_tool_call_without_parameters_and_without_tools():
    assert json.loads(auto_tool_call(make_job(tools=[NO_PARAMS]))["function"]["arguments"]) == {}
    reply = build_reply({"tool_calls": "auto", "content": "no tools here"}, make_job())
    assert reply.tool_calls == [] and reply.content == "no tools here" and reply.finish_reason == "stop"


def test_explicit_tool_calls_are_sent_as_written():
    spec = {
        "tool_calls": [
            {"name": "get_weather", "arguments": {"city": "Oslo"}},
            {"name": "unknown_fn", "arguments": "{not json", "id": "call_x"},
        ],
        "finish_reason": "stop",
    }
    reply = build_reply(spec, make_job(tools=[WEATHER]))
    assert [c["function"]["arguments"] for c in reply.tool_calls] == ['{"city": "Oslo"}', "{not json"]
    assert reply.tool_calls[1]["id"] == "call_x"
    assert reply.finish_reason == "stop"


def test_json_auto_follows_the_schema_and_json_object_gets_an_object():
    fmt = {"type": "json_schema", "json_schema": {"name": "r", "schema": SCHEMA, "strict": True}}
    reply = build_reply({"json": "auto"}, make_job(response_format=fmt))
    jsonschema.validate(json.loads(reply.content), SCHEMA)
    assert json.loads(build_reply({"json": "auto"}, make_job(response_format={"type": "json_object"})).content) == {}
    assert json.loads(build_reply({"json": {"a": [1]}}, make_job()).content) == {"a": [1]}


def test_progress_steps_reveal_reasoning_then_content():
    client = StubClient()
    rules = [
        {
            "match": {},
            "reply": {"reasoning_content": "abcd", "content": "wxyz", "progress_steps": 4, "progress_interval_s": 0},
        }
    ]
    reply, ctx = run(rules, make_job(), client)
    assert client.posts == [("", "ab"), ("", "abcd"), ("wx", "abcd"), ("wxyz", "abcd")]
    assert reply.content == "wxyz" and ctx.progress_posts == 4


def test_no_progress_for_tools_jobs_or_without_the_feature():
    rules = [
        {"match": {}, "reply": {"tool_calls": "auto", "content": "x", "progress_steps": 3, "progress_interval_s": 0}}
    ]
    client = StubClient()
    run(rules, make_job(tools=[WEATHER]), client)
    run(
        [{"match": {}, "reply": {"content": "x", "progress_steps": 2, "progress_interval_s": 0}}],
        make_job(),
        client,
        progress=False,
    )
    assert client.posts == []


def test_cancel_stops_a_cancel_aware_rule():
    rules = [{"match": {}, "reply": {"content": "abcdef", "progress_steps": 3, "progress_interval_s": 0}}]
    client = StubClient(cancel_after=1)
    with pytest.raises(JobCancelled):
        run(rules, make_job(), client)
    assert len(client.posts) == 1


def test_cancel_unaware_rule_keeps_going():
    rules = [
        {
            "match": {},
            "reply": {"content": "abcdef", "progress_steps": 3, "progress_interval_s": 0, "cancel_aware": False},
        }
    ]
    client = StubClient(cancel_after=1)
    reply, ctx = run(rules, make_job(), client)
    assert reply.content == "abcdef" and ctx.cancelled
    assert len(client.posts) == 1  # a cancelled context posts no more


def test_fault_rule_and_no_matching_rule():
    with pytest.raises(JobFault, match=r"^out of cheese$"):
        run([{"match": {}, "reply": {"fault": "out of cheese"}}], make_job())
    with pytest.raises(JobFault, match="no rule matches"):
        run([{"match": {"model": "other"}, "reply": {"content": "x"}}], make_job())
