"""The scripted backend: deterministic replies from a rules file, for demos and tests.

It exercises every part of the protocol without a model: progress in steps, cancel,
delays, faults, tool calls and structured output that conform to the request (the
`auto` modes) or deliberately do not (explicit values are sent as written, so tests
can provoke the Horde's ChatSubmitNonconformant refusal).
"""

from __future__ import annotations

import json
import logging
import math
import threading
from typing import Any

from horde.bridge.context import JobContext
from horde.bridge.job import Job, JobCancelled, JobFault, Reply, tool_call
from horde.bridge.messages import estimate_usage
from horde.bridge.rules import DEFAULT_RULES, Rule, fill_template, find_rule
from horde.bridge.schema_instance import instance_for
from horde.bridge.text_job import TextJob, TextReply, finish

log = logging.getLogger(__name__)

PROGRESS_STEP_INTERVAL_S = 0.2


class ScriptedBackend:
    def __init__(self, rules: list[Rule] | tuple[Rule, ...] = DEFAULT_RULES):
        self.rules = list(rules)

    def generate(self, job: Job, ctx: JobContext) -> Reply:
        rule = find_rule(self.rules, job)
        if rule is None:
            raise JobFault("scripted worker: no rule matches this job")
        spec = rule.reply
        reply = build_reply(spec, job)
        cancel_aware = spec.get("cancel_aware", True)
        _play_progress(spec, reply, ctx, cancel_aware)
        if ctx.wait(spec.get("delay_s", 0)) and cancel_aware:
            raise JobCancelled()
        if "fault" in spec:
            raise JobFault(spec["fault"])
        return reply

    def complete(self, job: TextJob) -> TextReply:
        """A text job's generation: the rule matching its prompt (as a user message) gives the text."""
        as_chat = Job(
            id=job.ids[0],
            model=job.model,
            ttl_s=job.ttl_s,
            payload={"messages": [{"role": "user", "content": job.prompt}], "max_tokens": job.max_length},
        )
        rule = find_rule(self.rules, as_chat)
        if rule is None:
            raise JobFault("scripted worker: no rule matches this job")
        spec = rule.reply
        threading.Event().wait(spec.get("delay_s", 0))
        if "fault" in spec:
            raise JobFault(spec["fault"])
        reply = build_reply(spec, as_chat)
        return finish(reply.content or "", job, "length" if reply.finish_reason == "length" else "stop")


def build_reply(spec: dict, job: Job) -> Reply:
    """The reply a rule describes, with templates filled and `auto` parts generated."""
    content = fill_template(spec["content"], job) if "content" in spec else None
    reasoning = fill_template(spec["reasoning_content"], job) if "reasoning_content" in spec else None
    if "json" in spec:
        content = json_content(spec["json"], job)
    calls = tool_calls_for(spec.get("tool_calls"), job)
    if content is None and not calls:
        content = ""
    usage = estimate_usage(job.messages, content, reasoning, calls)
    usage.update(spec.get("usage") or {})
    return Reply(
        content=content,
        reasoning_content=reasoning,
        tool_calls=calls,
        finish_reason=spec.get("finish_reason") or ("tool_calls" if calls else "stop"),
        usage=usage,
    )


def json_content(value: Any, job: Job) -> str:
    """`auto`: a document that validates against the request's json_schema, `{}` otherwise."""
    if value == "auto":
        schema = job.json_schema
        value = instance_for(schema) if schema is not None else {}
    return json.dumps(value)


def tool_calls_for(value: Any, job: Job) -> list[dict]:
    if value is None:
        return []
    if value == "auto":
        call = auto_tool_call(job)
        return [call] if call else []
    calls = []
    for spec in value:
        arguments = spec.get("arguments", {})
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments)
        calls.append(tool_call(spec["name"], arguments, spec.get("id")))
    return calls


def auto_tool_call(job: Job) -> dict | None:
    """A call to the forced function, else to the first tool, with schema-valid arguments."""
    functions = [tool.get("function") or {} for tool in job.tools if tool.get("type", "function") == "function"]
    if not functions or job.payload.get("tool_choice") == "none":
        log.debug("job %s: tool_calls auto, but the job offers no callable tool", job.id)
        return None
    forced = job.forced_function()
    function = next((f for f in functions if f.get("name") == forced), functions[0])
    arguments = instance_for(function.get("parameters") or {"type": "object"})
    if not isinstance(arguments, dict):
        arguments = {}
    return tool_call(function.get("name", ""), json.dumps(arguments))


def _play_progress(spec: dict, reply: Reply, ctx: JobContext, cancel_aware: bool) -> None:
    """Reveal reasoning then content in `progress_steps` equal parts, one post per step."""
    steps = spec.get("progress_steps", 0)
    interval_s = spec.get("progress_interval_s", PROGRESS_STEP_INTERVAL_S)
    reasoning, content = reply.reasoning_content or "", reply.content or ""
    total = len(reasoning) + len(content)
    for step in range(1, steps + 1):
        if ctx.wait(interval_s) and cancel_aware:
            raise JobCancelled()
        shown = math.ceil(total * step / steps)
        stop = ctx.report(content[: max(0, shown - len(reasoning))], reasoning[:shown], force=True)
        if stop and cancel_aware:
            raise JobCancelled()
