"""Anthropic's `system` and `messages` as chat messages.

User content: `text`, `image` (a base64 or URL source) and `tool_result`
blocks; each tool result becomes a tool message, ahead of the user's other
blocks. Assistant content: `text` and `tool_use` blocks (tool calls);
`thinking` and `redacted_thinking` blocks are the model's earlier reasoning
and are not sent to the model, as chat history's reasoning_content is not.
`cache_control` on a block is accepted and named (the Horde caches nothing);
`citations` and a thinking block's `signature` echo the model's own output and
are dropped unnamed. A `system` message among the messages (Anthropic's
mid-conversation system beta) is a system message where it stands, from its
text. Any other block type or key is refused.
"""

from __future__ import annotations

import json
from typing import Any

from horde.oai.ignored import Ignored
from horde.oai.screening.base import BAD_REQUEST, ScreeningError, require_list, require_object, require_string

#: `system` mid-conversation (Anthropic's beta, Claude Code sends it): a system message where it stands.
ROLES = ("user", "assistant", "system")
BLOCKS_BY_ROLE = {
    "user": ("text", "image", "tool_result"),
    "assistant": ("text", "tool_use", "thinking", "redacted_thinking"),
    "system": ("text",),
}
BLOCK_KEYS = {
    "text": {"type", "text", "cache_control", "citations"},
    "image": {"type", "source", "cache_control"},
    "tool_use": {"type", "id", "name", "input", "cache_control"},
    "tool_result": {"type", "tool_use_id", "content", "is_error", "cache_control"},
    "thinking": {"type", "thinking", "signature"},
    "redacted_thinking": {"type", "data"},
}
IMAGE_MEDIA_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp")
TOOL_ERROR_PREFIX = "Error: "
#: A key the Horde accepts on a block and does not act on: named.
CACHE_CONTROL = "cache_control"


def system_messages(value: Any, ignored: Ignored) -> list[dict]:
    if value is None:
        return []
    if isinstance(value, str):
        return [{"role": "system", "content": value}] if value else []
    blocks = [
        _block(block, f"system[{index}]", ("text",), ignored)
        for index, block in enumerate(require_list(value, "system"))
    ]
    text = "\n\n".join(block["text"] for block in blocks)
    return [{"role": "system", "content": text}] if text else []


def chat_messages(value: Any, ignored: Ignored) -> list[dict]:
    if value is None:
        raise ScreeningError("messages: Field required", code=BAD_REQUEST, param="messages")
    messages: list[dict] = []
    for index, entry in enumerate(require_list(value, "messages")):
        path = f"messages[{index}]"
        message = require_object(entry, path)
        for key in message:
            if key not in ("role", "content"):
                raise ScreeningError(f"{path}.{key}: Extra inputs are not permitted", param=f"{path}.{key}")
        role = message.get("role")
        if role not in ROLES:
            raise ScreeningError(
                f"{path}.role: Input should be 'user', 'assistant' or 'system'", code=BAD_REQUEST, param=f"{path}.role"
            )
        content = message.get("content")
        if isinstance(content, str):
            messages.append({"role": role, "content": content})
            continue
        blocks = [
            _block(block, f"{path}.content[{number}]", BLOCKS_BY_ROLE[role], ignored)
            for number, block in enumerate(require_list(content, f"{path}.content"))
        ]
        if role == "system":
            messages.append({"role": "system", "content": "\n\n".join(block["text"] for block in blocks)})
        else:
            messages += _user(blocks) if role == "user" else [_assistant(blocks)]
    return messages


def _block(value: Any, path: str, allowed: tuple[str, ...], ignored: Ignored) -> dict:
    block = require_object(value, path)
    kind = block.get("type")
    if kind not in allowed:
        raise ScreeningError(
            f"{path}.type: the AI Horde does not serve {kind!r} blocks here; it serves {', '.join(allowed)}.",
            param=f"{path}.type",
        )
    for key in block:
        if key not in BLOCK_KEYS[kind]:
            raise ScreeningError(f"{path}.{key}: Extra inputs are not permitted", param=f"{path}.{key}")
    if block.get(CACHE_CONTROL) is not None:
        ignored.add(f"{path}.{CACHE_CONTROL}")
    if kind == "text":
        return {"type": "text", "text": require_string(block.get("text"), f"{path}.text")}
    if kind == "image":
        return {"type": "image_url", "image_url": {"url": _image_url(block.get("source"), f"{path}.source")}}
    if kind == "tool_use":
        if not isinstance(block.get("input"), dict):
            raise ScreeningError(f"{path}.input: Input should be an object", code=BAD_REQUEST, param=f"{path}.input")
        return {
            "type": "tool_use",
            "id": require_string(block.get("id"), f"{path}.id"),
            "name": require_string(block.get("name"), f"{path}.name"),
            "input": block["input"],
        }
    if kind == "tool_result":
        return {
            "type": "tool_result",
            "tool_use_id": require_string(block.get("tool_use_id"), f"{path}.tool_use_id"),
            "text": _result_text(block.get("content"), f"{path}.content", ignored),
            "is_error": block.get("is_error"),
        }
    return {"type": "thinking"}


def _image_url(value: Any, path: str) -> str:
    source = require_object(value, path)
    kind = source.get("type")
    if kind == "url":
        return require_string(source.get("url"), f"{path}.url")
    if kind == "base64":
        media_type = source.get("media_type")
        if media_type not in IMAGE_MEDIA_TYPES:
            raise ScreeningError(
                f"{path}.media_type: Input should be one of {', '.join(IMAGE_MEDIA_TYPES)}",
                code=BAD_REQUEST,
                param=f"{path}.media_type",
            )
        return f"data:{media_type};base64,{require_string(source.get('data'), f'{path}.data')}"
    raise ScreeningError(f"{path}.type: the AI Horde takes 'base64' and 'url' image sources.", param=f"{path}.type")


def _result_text(value: Any, path: str, ignored: Ignored) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    blocks = [
        _block(block, f"{path}[{index}]", ("text",), ignored) for index, block in enumerate(require_list(value, path))
    ]
    return "".join(block["text"] for block in blocks)


def _user(blocks: list[dict]) -> list[dict]:
    """Tool results first, as tool messages; then the user's own blocks, if any."""
    messages = []
    for block in blocks:
        if block["type"] == "tool_result":
            text = TOOL_ERROR_PREFIX + block["text"] if block["is_error"] else block["text"]
            messages.append({"role": "tool", "tool_call_id": block["tool_use_id"], "content": text})
    parts = [block for block in blocks if block["type"] != "tool_result"]
    if parts or not messages:
        messages.append({"role": "user", "content": parts})
    return messages


def _assistant(blocks: list[dict]) -> dict:
    text = "".join(block["text"] for block in blocks if block["type"] == "text")
    calls = [
        {
            "id": block["id"],
            "type": "function",
            "function": {"name": block["name"], "arguments": json.dumps(block["input"])},
        }
        for block in blocks
        if block["type"] == "tool_use"
    ]
    message: dict = {"role": "assistant", "content": text or (None if calls else "")}
    if calls:
        message["tool_calls"] = calls
    return message
