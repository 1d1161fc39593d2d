"""Reply conformance: what a submit must keep of the request's contract."""

from horde.chat.conformance import violation

TOOLS = [{"type": "function", "function": {"name": "f"}}]


def call(name="f", arguments="{}"):
    return {"id": "c", "type": "function", "function": {"name": name, "arguments": arguments}}


def test_plain_text_conforms():
    assert violation({}, {"content": "hi"}, strict=True) is None


def test_truncated_json_is_not_checked():
    assert (
        violation(
            {"response_format": {"type": "json_object"}}, {"content": "{", "finish_reason": "length"}, strict=True
        )
        is None
    )


def test_json_object_must_be_an_object():
    assert "JSON object" in violation({"response_format": {"type": "json_object"}}, {"content": "[1]"}, strict=True)


def test_guarantees_only_under_strict():
    payload = {"tools": TOOLS, "tool_choice": "required"}
    assert violation(payload, {"content": "no"}, strict=True)
    assert violation(payload, {"content": "no"}, strict=False) is None


def test_forced_function_called_passes():
    payload = {"tools": TOOLS, "tool_choice": {"type": "function", "function": {"name": "f"}}}
    assert violation(payload, {"tool_calls": [call()]}, strict=True) is None


def test_tool_calls_without_tools():
    assert "does not define" in violation({}, {"tool_calls": [call()]}, strict=False)
