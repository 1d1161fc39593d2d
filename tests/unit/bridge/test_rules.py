"""The scripted worker's rules: loading, checking, matching and templates."""

import json
from pathlib import Path

import pytest

from horde.bridge.job import Job
from horde.bridge.rules import (
    DEFAULT_CONTENT,
    DEFAULT_RULES,
    RulesError,
    fill_template,
    find_rule,
    load_rules,
    parse_rules,
    rule_matches,
)

TOOLS = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
EXAMPLE_RULES = Path(__file__).resolve().parents[3] / "examples" / "scripted_rules.json"
IMAGE = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}


def job(messages=None, model="m/one", **payload):
    messages = messages or [{"role": "user", "content": "hello world"}]
    return Job(id="j1", model=model, ttl_s=150, payload={"messages": messages, **payload})


def test_default_rule_answers_every_job():
    rule = find_rule(DEFAULT_RULES, job())
    assert rule.reply == {"content": DEFAULT_CONTENT}


def test_first_matching_rule_wins():
    rules = parse_rules(
        {
            "rules": [
                {"match": {"contains": "nope"}, "reply": {"content": "first"}},
                {"match": {"contains": "hello"}, "reply": {"content": "second"}},
                {"match": {}, "reply": {"content": "third"}},
            ]
        }
    )
    assert find_rule(rules, job()).reply["content"] == "second"


def test_no_rule_matches():
    rules = parse_rules({"rules": [{"match": {"model": "other"}, "reply": {"content": "x"}}]})
    assert find_rule(rules, job()) is None


@pytest.mark.parametrize(
    "match, expected",
    [
        ({"model": "m/one"}, True),
        ({"model": "m/two"}, False),
        ({"contains": "lo wo"}, True),
        ({"contains": "HELLO"}, False),
        ({"last_role": "user"}, True),
        ({"last_role": "tool"}, False),
        ({"has_tools": False}, True),
        ({"has_tools": True}, False),
        ({"response_format": "text"}, True),
        ({"response_format": "json_object"}, False),
        ({"has_image": False}, True),
        ({"model": "m/one", "contains": "hello", "has_tools": True}, False),
        ({}, True),
    ],
)
def test_match_keys_on_a_plain_job(match, expected):
    assert rule_matches(match, job()) is expected


def test_contains_reads_the_last_user_message_only_and_text_parts():
    messages = [
        {"role": "user", "content": "first question"},
        {"role": "assistant", "content": "an answer with secret"},
        {"role": "user", "content": [{"type": "text", "text": "second "}, IMAGE, {"type": "text", "text": "part"}]},
    ]
    j = job(messages)
    assert rule_matches({"contains": "second part"}, j)
    assert not rule_matches({"contains": "first"}, j)
    assert not rule_matches({"contains": "secret"}, j)
    assert rule_matches({"has_image": True}, j)


def test_match_tools_format_and_last_role():
    messages = [
        {"role": "user", "content": "q"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "42"},
    ]
    j = job(messages, tools=TOOLS, response_format={"type": "json_schema", "json_schema": {"name": "x", "schema": {}}})
    assert rule_matches({"last_role": "tool", "has_tools": True, "response_format": "json_schema"}, j)
    assert not rule_matches({"response_format": "text"}, j)


def test_template_fills_known_fields_and_keeps_other_braces():
    messages = [{"role": "user", "content": [{"type": "text", "text": "look"}, IMAGE, IMAGE]}]
    text = fill_template('{model} saw {n_images} image(s) for "{last_user}" {"json": {unknown}}', job(messages))
    assert text == 'm/one saw 2 image(s) for "look" {"json": {unknown}}'


def test_last_tool_output_is_the_last_tool_messages_text():
    """A rule answers from what the client's own tool returned: the latest tool message, parts joined."""
    messages = [
        {"role": "user", "content": "list the files"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function"}]},
        {"role": "tool", "tool_call_id": "c1", "content": "old.txt"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c2", "type": "function"}]},
        {"role": "tool", "tool_call_id": "c2", "content": [{"type": "text", "text": "marker-1.txt\n"}, IMAGE]},
        {"role": "user", "content": "a reminder the client added"},
    ]
    assert fill_template("Files: {last_tool_output}", job(messages)) == "Files: marker-1.txt\n"
    assert fill_template("[{last_tool_output}]", job()) == "[]"


@pytest.mark.parametrize(
    "document, fragment",
    [
        ({"rule": []}, "expected"),
        ({"rules": [{"match": {"colour": "red"}, "reply": {}}]}, "unknown key 'colour'"),
        ({"rules": [{"match": {}, "reply": {"contnet": "x"}}]}, "unknown key 'contnet'"),
        ({"rules": [{"match": {"has_tools": "yes"}, "reply": {}}]}, "has_tools has the wrong type"),
        ({"rules": [{"match": {"response_format": "xml"}, "reply": {}}]}, "response_format must be one of"),
        ({"rules": [{"match": {}, "reply": {"tool_calls": "some"}}]}, 'tool_calls must be "auto" or a list'),
        ({"rules": [{"match": {}, "reply": {"tool_calls": [{"arguments": {}}]}}]}, "tool_calls[0]"),
        ({"rules": [{"match": {}, "reply": {"finish_reason": "done"}}]}, "finish_reason must be one of"),
        ({"rules": [{"match": {}, "reply": {"progress_steps": True}}]}, "progress_steps has the wrong type"),
        ({"rules": [{"match": {}}]}, "reply must be an object"),
    ],
)
def test_bad_rules_are_refused_with_the_key(document, fragment):
    with pytest.raises(RulesError) as excinfo:
        parse_rules(document)
    assert fragment in str(excinfo.value)


def test_load_rules_reads_the_example_file():
    rules = load_rules(str(EXAMPLE_RULES))
    assert len(rules) >= 5
    assert find_rule(rules, job([{"role": "user", "content": "please fail"}])).reply["fault"]


def test_load_rules_reports_an_unreadable_file(tmp_path):
    path = tmp_path / "rules.json"
    path.write_text("{not json")
    with pytest.raises(RulesError, match="cannot read rules file"):
        load_rules(str(path))
    path.write_text(json.dumps({"rules": [{"match": {}, "reply": {"content": "ok"}}]}))
    assert load_rules(str(path))[0].reply == {"content": "ok"}
