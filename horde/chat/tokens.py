"""Token estimates without a tokenizer: about four characters a token.

The Horde cannot know each worker's tokenizer; an estimate is enough for
context fitting and pricing, and workers report real counts at submit.
"""

from __future__ import annotations

import json
import math
from typing import Any

CHARS_PER_TOKEN = 4
MESSAGE_OVERHEAD_TOKENS = 4
IMAGE_TOKENS = 85


def text_tokens(text: str | None) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN) if text else 0


def reply_tokens(reply: dict) -> int:
    """The estimate of a worker's reply: its content, its reasoning and its tool calls' compact JSON."""
    tokens = text_tokens(reply.get("content")) + text_tokens(reply.get("reasoning_content"))
    if reply.get("tool_calls"):
        tokens += text_tokens(json.dumps(reply["tool_calls"], separators=(",", ":")))
    return tokens


def content_text(content: Any) -> str:
    """The text of a message content: a string or the text parts of a list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = (part.get("text", "") for part in content if isinstance(part, dict) and part.get("type") == "text")
        return "".join(texts)
    return ""


def count_images(content: Any) -> int:
    if not isinstance(content, list):
        return 0
    return sum(1 for part in content if isinstance(part, dict) and part.get("type") == "image_url")


def message_tokens(message: dict) -> int:
    content = message.get("content")
    if isinstance(content, str):  # the common case, kept cheap: fitting estimates every message
        tokens = MESSAGE_OVERHEAD_TOKENS + -(-len(content) // CHARS_PER_TOKEN)
    else:
        tokens = MESSAGE_OVERHEAD_TOKENS + text_tokens(content_text(content)) + IMAGE_TOKENS * count_images(content)
    if message.get("tool_calls"):
        tokens += text_tokens(json.dumps(message["tool_calls"], separators=(",", ":")))
    return tokens


def tools_tokens(tools: list | None) -> int:
    return text_tokens(json.dumps(tools, separators=(",", ":"))) if tools else 0


def prompt_tokens(messages: list[dict], tools: list | None = None) -> int:
    return sum(message_tokens(message) for message in messages) + tools_tokens(tools)
