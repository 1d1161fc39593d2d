"""Does a submitted reply keep the request's contract?

Always checked: tool calls name a function of the request and carry JSON
arguments; a json_object reply is JSON. Checked under strict conformance (the
worker declared the guarantee): a strict json_schema reply validates; a
required or forced tool_choice was followed. A reply cut by `length` is not
checked for JSON, since a truncated document cannot be complete.
"""

from __future__ import annotations

import json

import jsonschema


def violation(payload: dict, reply: dict, strict: bool) -> str | None:
    """A sentence saying what the reply breaks, or None when it conforms."""
    tool_calls = reply.get("tool_calls") or []
    names = {tool["function"]["name"] for tool in payload.get("tools") or [] if "function" in tool}
    for call in tool_calls:
        name = call["function"]["name"]
        if name not in names:
            return f"The reply calls the function '{name}', which the request does not define."
        try:
            json.loads(call["function"]["arguments"])
        except ValueError:
            return f"The arguments of the call to '{name}' are not JSON."
    if tool_calls and not payload.get("tools"):
        return "The reply has tool calls, but the request has no tools."
    if strict:
        problem = _tool_choice_violation(payload.get("tool_choice"), tool_calls, bool(payload.get("tools")))
        if problem:
            return problem
    if tool_calls or reply.get("finish_reason") == "length":
        return None
    return _format_violation(payload.get("response_format"), reply.get("content"), strict)


def _tool_choice_violation(tool_choice, tool_calls, has_tools) -> str | None:
    if not has_tools:
        return None
    if tool_choice == "required" and not tool_calls:
        return "The request's 'tool_choice' is 'required', so the reply has to call a function."
    if isinstance(tool_choice, dict):
        forced = tool_choice.get("function", {}).get("name")
        if not any(call["function"]["name"] == forced for call in tool_calls):
            return f"The request's 'tool_choice' forces the function '{forced}', so the reply has to call it."
    return None


def _format_violation(response_format, content, strict) -> str | None:
    kind = (response_format or {}).get("type")
    if kind not in ("json_object", "json_schema"):
        return None
    try:
        document = json.loads(content or "")
    except ValueError:
        return f"The request's 'response_format' is '{kind}', so the reply content has to be JSON."
    if kind == "json_object" and not isinstance(document, dict):
        return "The request's 'response_format' is 'json_object', so the reply content has to be a JSON object."
    spec = response_format.get("json_schema") or {}
    if kind == "json_schema" and strict and spec.get("strict"):
        try:
            jsonschema.validate(document, spec.get("schema") or {})
        except jsonschema.ValidationError as error:
            return f"The reply does not validate against the schema '{spec.get('name')}': {error.message}"
        except Exception:
            return None
    return None
