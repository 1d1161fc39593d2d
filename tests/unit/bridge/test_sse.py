"""The OpenAI stream reader: SSE framing, delta accumulation, finish reasons and usage."""

import json

import pytest

from horde.bridge.backends.openai_compat import make_reply, map_finish_reason, map_usage
from horde.bridge.backends.sse import ChatStreamAccumulator, StreamError, iter_sse_data
from horde.bridge.job import Job


def sse(*chunks):
    """Canned SSE lines as `iter_lines()` gives them: one data line and one blank line per event."""
    lines = []
    for chunk in chunks:
        lines += [f"data: {chunk if isinstance(chunk, str) else json.dumps(chunk)}".encode(), b""]
    return lines


def delta(**fields):
    return {"choices": [{"index": 0, "delta": fields, "finish_reason": None}]}


def finish(reason):
    return {"choices": [{"index": 0, "delta": {}, "finish_reason": reason}]}


def accumulate(lines):
    acc = ChatStreamAccumulator()
    for data in iter_sse_data(lines):
        acc.feed_data(data)
    return acc


def test_sse_framing_comments_multiline_and_done():
    lines = [": keep-alive", "event: message", 'data: {"a":', "data: 1}", "", "", "data:[DONE]", "", "data: {}", ""]
    assert list(iter_sse_data(lines)) == ['{"a":\n1}']


def test_sse_last_event_without_blank_line_and_crlf():
    assert list(iter_sse_data([b'data: {"x": 1}\r\n', b"\r\n", b'data: {"y": 2}'])) == ['{"x": 1}', '{"y": 2}']


def test_content_and_reasoning_accumulate_in_order():
    acc = accumulate(
        sse(
            delta(role="assistant", content=""),
            delta(reasoning_content="Let me "),
            delta(reasoning="think."),
            delta(content="Hel"),
            delta(content="lo!"),
            finish("stop"),
            {
                "choices": [],
                "usage": {
                    "prompt_tokens": 7,
                    "completion_tokens": 5,
                    "completion_tokens_details": {"reasoning_tokens": 3},
                },
            },
            "[DONE]",
        )
    )
    assert acc.content == "Hello!"
    assert acc.reasoning == "Let me think."
    assert acc.finish_reason == "stop"
    assert acc.usage["prompt_tokens"] == 7
    assert acc.tool_calls() == []


def test_tool_call_deltas_join_by_index():
    acc = accumulate(
        sse(
            delta(
                role="assistant",
                content=None,
                tool_calls=[
                    {
                        "index": 0,
                        "id": "call_a",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": ""},
                    }
                ],
            ),
            delta(tool_calls=[{"index": 0, "function": {"arguments": '{"city": '}}]),
            delta(
                tool_calls=[
                    {
                        "index": 1,
                        "id": "call_b",
                        "type": "function",
                        "function": {"name": "get_time", "arguments": "{}"},
                    }
                ]
            ),
            delta(tool_calls=[{"index": 0, "function": {"arguments": '"Oslo"}'}}]),
            finish("tool_calls"),
            "[DONE]",
        )
    )
    calls = acc.tool_calls()
    assert [c["id"] for c in calls] == ["call_a", "call_b"]
    assert calls[0]["function"] == {"name": "get_weather", "arguments": '{"city": "Oslo"}'}
    assert calls[1]["function"] == {"name": "get_time", "arguments": "{}"}
    assert acc.content == ""


def test_whole_tool_call_without_index_or_id_and_object_arguments():
    acc = ChatStreamAccumulator()
    acc.feed(
        {
            "choices": [
                {
                    "index": 0,
                    "message": {
                        "role": "assistant",
                        "content": "",
                        "tool_calls": [{"function": {"name": "f", "arguments": {"a": 1}}}, {"function": {"name": "g"}}],
                    },
                    "finish_reason": "tool_calls",
                }
            ]
        }
    )
    calls = acc.tool_calls()
    assert [c["function"]["name"] for c in calls] == ["f", "g"]
    assert json.loads(calls[0]["function"]["arguments"]) == {"a": 1}
    assert calls[1]["function"]["arguments"] == "{}"
    assert all(c["id"].startswith("call_") for c in calls)


def test_other_choices_and_bad_json_are_ignored():
    acc = accumulate(sse({"choices": [{"index": 1, "delta": {"content": "other"}}]}, "not json", delta(content="ok")))
    assert acc.content == "ok"


def test_an_error_event_raises():
    with pytest.raises(StreamError, match="context size exceeded"):
        accumulate(sse(delta(content="a"), {"error": {"message": "context size exceeded", "code": 400}}))


@pytest.mark.parametrize(
    "raw, has_calls, expected",
    [
        ("stop", False, "stop"),
        ("length", False, "length"),
        ("length", True, "length"),
        ("eos", False, "stop"),
        (None, False, "stop"),
        ("stop", True, "tool_calls"),
        ("function_call", False, "tool_calls"),
    ],
)
def test_finish_reason_mapping(raw, has_calls, expected):
    assert map_finish_reason(raw, has_calls) == expected


def test_usage_from_the_server_or_estimated():
    job = Job(id="j", model="m", ttl_s=60, payload={"messages": [{"role": "user", "content": "x" * 40}]})
    assert map_usage(
        {"prompt_tokens": 12, "completion_tokens": 30, "completion_tokens_details": {"reasoning_tokens": 9}},
        job,
        "a",
        "b",
        [],
    ) == {"prompt_tokens": 12, "completion_tokens": 30, "reasoning_tokens": 9}
    assert map_usage(None, job, "y" * 8, None, []) == {"prompt_tokens": 10, "completion_tokens": 2}
    assert map_usage({"prompt_tokens": 5, "completion_tokens": 6}, job, "", "r" * 12, []) == {
        "prompt_tokens": 5,
        "completion_tokens": 6,
        "reasoning_tokens": 3,
    }


def test_make_reply_sends_null_content_with_tool_calls():
    job = Job(id="j", model="m", ttl_s=60, payload={"messages": []})
    acc = accumulate(
        sse(delta(tool_calls=[{"index": 0, "id": "c", "function": {"name": "f", "arguments": "{}"}}]), finish("stop"))
    )
    reply = make_reply(job, acc)
    assert reply.content is None and reply.finish_reason == "tool_calls" and len(reply.tool_calls) == 1
