"""The scripted worker's rules file: load it, check it, and find the rule for a job.

Format: `{"rules": [{"match": {...}, "reply": {...}}, ...]}`; the first rule whose
every `match` key holds wins. Keys are checked at load time, so a typo fails the
worker's start rather than silently never matching (examples/scripted_rules.json).

A reply's `content` and `reasoning_content` are templates: `{last_user}` (the last
user message's text), `{last_tool_output}` (the last tool message's text, so a rule
can answer from what a client's own tool returned), `{n_images}` and `{model}`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from horde.bridge.job import FINISH_REASONS, Job
from horde.bridge.messages import count_images, last_user_text, message_text

MATCH_KEYS = {
    "model": str,
    "contains": str,
    "last_role": str,
    "has_tools": bool,
    "response_format": str,
    "has_image": bool,
}
REPLY_KEYS = {
    "content": str,
    "reasoning_content": str,
    "tool_calls": (str, list),
    "json": object,
    "finish_reason": str,
    "usage": dict,
    "delay_s": (int, float),
    "progress_steps": int,
    "progress_interval_s": (int, float),
    "fault": str,
    "cancel_aware": bool,
}
RESPONSE_FORMATS = ("text", "json_object", "json_schema")
TEMPLATE_FIELDS = ("last_user", "last_tool_output", "n_images", "model")
DEFAULT_CONTENT = "Hello from the scripted worker."


@dataclass(frozen=True)
class Rule:
    match: dict
    reply: dict


DEFAULT_RULES = (Rule(match={}, reply={"content": DEFAULT_CONTENT}),)


class RulesError(ValueError):
    """A rules file that the scripted worker cannot use; the message names the bad key."""


def load_rules(path: str) -> list[Rule]:
    try:
        with open(path, encoding="utf-8") as handle:
            document = json.load(handle)
    except (OSError, ValueError) as exc:
        raise RulesError(f"cannot read rules file {path}: {exc}") from None
    return parse_rules(document, source=path)


def parse_rules(document: Any, source: str = "rules") -> list[Rule]:
    if not isinstance(document, dict) or not isinstance(document.get("rules"), list):
        raise RulesError(f'{source}: expected {{"rules": [...]}}')
    rules = []
    for index, entry in enumerate(document["rules"]):
        where = f"{source}: rules[{index}]"
        if not isinstance(entry, dict) or set(entry) - {"match", "reply"}:
            raise RulesError(f'{where} must be an object with "match" and "reply"')
        match, reply = entry.get("match") or {}, entry.get("reply")
        _check_keys(match, MATCH_KEYS, f"{where}.match")
        if not isinstance(reply, dict):
            raise RulesError(f"{where}.reply must be an object")
        _check_keys(reply, REPLY_KEYS, f"{where}.reply")
        _check_reply(reply, f"{where}.reply")
        if "response_format" in match and match["response_format"] not in RESPONSE_FORMATS:
            raise RulesError(f"{where}.match.response_format must be one of {', '.join(RESPONSE_FORMATS)}")
        rules.append(Rule(match=match, reply=reply))
    return rules


def _check_keys(obj, allowed: dict, where: str) -> None:
    if not isinstance(obj, dict):
        raise RulesError(f"{where} must be an object")
    for key, value in obj.items():
        if key not in allowed:
            raise RulesError(f"{where}: unknown key {key!r}; known: {', '.join(allowed)}")
        kind = allowed[key]
        if kind is not object and (not isinstance(value, kind) or (kind is int and isinstance(value, bool))):
            raise RulesError(f"{where}.{key} has the wrong type")


def _check_reply(reply: dict, where: str) -> None:
    calls = reply.get("tool_calls")
    if isinstance(calls, str) and calls != "auto":
        raise RulesError(f'{where}.tool_calls must be "auto" or a list')
    if isinstance(calls, list):
        for i, call in enumerate(calls):
            if (
                not isinstance(call, dict)
                or not isinstance(call.get("name"), str)
                or not isinstance(call.get("arguments", {}), (dict, str))
                or set(call) - {"name", "arguments", "id"}
            ):
                raise RulesError(
                    f'{where}.tool_calls[{i}] must be {{"name", "arguments"}} with arguments an object or a string'
                )
    if "finish_reason" in reply and reply["finish_reason"] not in FINISH_REASONS:
        raise RulesError(f"{where}.finish_reason must be one of {', '.join(FINISH_REASONS)}")
    if reply.get("progress_steps", 0) < 0 or reply.get("delay_s", 0) < 0:
        raise RulesError(f"{where}: progress_steps and delay_s cannot be negative")


def rule_matches(match: dict, job: Job) -> bool:
    """Every key of `match` holds for the job (an empty match holds for every job)."""
    checks = {
        "model": lambda want: job.model == want,
        "contains": lambda want: want in last_user_text(job.messages),
        "last_role": lambda want: bool(job.messages) and job.messages[-1].get("role") == want,
        "has_tools": lambda want: bool(job.tools) == want,
        "response_format": lambda want: job.response_format_type == want,
        "has_image": lambda want: (count_images(job.messages) > 0) == want,
    }
    return all(checks[key](want) for key, want in match.items())


def find_rule(rules: Iterable[Rule], job: Job) -> Rule | None:
    return next((rule for rule in rules if rule_matches(rule.match, job)), None)


def last_tool_output(messages: list[dict]) -> str:
    """The text of the last tool message (a tool's result the client sent back), "" when there is none."""
    return next((message_text(message) for message in reversed(messages) if message.get("role") == "tool"), "")


def fill_template(text: str, job: Job) -> str:
    """Replace `{last_user}`, `{last_tool_output}`, `{n_images}` and `{model}`; other braces (JSON) stay as they are."""
    values = {
        "last_user": last_user_text(job.messages),
        "last_tool_output": last_tool_output(job.messages),
        "n_images": str(count_images(job.messages)),
        "model": job.model,
    }
    for name in TEMPLATE_FIELDS:
        text = text.replace("{" + name + "}", values[name])
    return text
