"""The conversation key a dialect's client names, for the native request's `conversation_key`.

In order: `prompt_cache_key` (chat and Responses), a session id (`session_id` in the body, or the `x-session-id`
header), Claude Code's session (`metadata.user_id`, a JSON string whose `session_id` it is, or the
`X-Claude-Code-Session-Id` header). A Responses call that names none continues the conversation of its
`previous_response_id` (the stored key of that response's request). Without any of these the chat service derives
one from the request's leading messages (horde/chat/conversation.py).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from werkzeug.datastructures import Headers

from horde.chat import request_rows
from horde.chat.conversation import CONVERSATION_KEY_MAX_CHARS, FIELD
from horde.oai.screening.base import empty_string, require_string, string_too_long

if TYPE_CHECKING:
    from horde.runtime import Runtime

SESSION_HEADER = "x-session-id"
CLAUDE_CODE_SESSION_HEADER = "x-claude-code-session-id"
_BODY_KEYS = ("prompt_cache_key", "session_id")


def of_openai(body: Mapping[str, Any], headers: Headers) -> str | None:
    """Chat completions and Responses: `prompt_cache_key`, then `session_id`, then the session header."""
    for name in _BODY_KEYS:
        if body.get(name) is not None:
            return checked_key(body[name], name)
    return _header(headers, SESSION_HEADER)


def of_messages(body: Mapping[str, Any], headers: Headers) -> str | None:
    """Anthropic's Messages: the session header, then Claude Code's session (`metadata.user_id`'s `session_id`,
    or its header)."""
    key = _header(headers, SESSION_HEADER)
    if key is not None:
        return key
    metadata = body.get("metadata")
    user_id = metadata.get("user_id") if isinstance(metadata, dict) else None
    session = _claude_code_session(user_id)
    if session is not None:
        return checked_key(session, "metadata.user_id")
    return _header(headers, CLAUDE_CODE_SESSION_HEADER)


def attach(native: dict, key: str | None) -> None:
    """Put the client's key in the native request (which its schema bounds again)."""
    if key is not None:
        native[FIELD] = key


def of_request(runtime: Runtime, request_id: str) -> str | None:
    """The stored conversation key of a request (a Responses call's previous response)."""
    with runtime.db.read() as session:
        request = request_rows.read_request(session, request_id)
    return None if request is None else request.conversation_key


def _claude_code_session(user_id: Any) -> Any:
    """Claude Code's `metadata.user_id`: a JSON object as a string, with `session_id` (None for anything else)."""
    if not isinstance(user_id, str) or not user_id.startswith("{"):
        return None
    try:
        parsed = json.loads(user_id)
    except ValueError:
        return None
    return parsed.get("session_id") if isinstance(parsed, dict) else None


def _header(headers: Headers, name: str) -> str | None:
    value = headers.get(name)
    return None if value is None or not value.strip() else checked_key(value.strip(), name)


def checked_key(value: Any, param: str) -> str:
    """A named conversation key: a string of 1 to CONVERSATION_KEY_MAX_CHARS characters, else refused with `param`."""
    key = require_string(value, param)
    if not key:
        raise empty_string(param)
    if len(key) > CONVERSATION_KEY_MAX_CHARS:
        raise string_too_long(param, CONVERSATION_KEY_MAX_CHARS, len(key))
    return key
