"""Reading OpenAI-format messages: text, images and sizes, for rules and usage estimates."""

from __future__ import annotations

import math

CHARS_PER_TOKEN = 4


def message_text(message: dict) -> str:
    """The text of a message whose content is a string or a list of parts."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            part.get("text") or "" for part in content if isinstance(part, dict) and part.get("type") == "text"
        )
    return ""


def last_user_text(messages: list[dict]) -> str:
    for message in reversed(messages):
        if message.get("role") == "user":
            return message_text(message)
    return ""


def count_images(messages: list[dict]) -> int:
    return sum(
        1
        for message in messages
        if isinstance(message.get("content"), list)
        for part in message["content"]
        if isinstance(part, dict) and part.get("type") == "image_url"
    )


def messages_chars(messages: list[dict]) -> int:
    """Characters of text a backend reads: contents plus tool call names and arguments."""
    total = 0
    for message in messages:
        total += len(message_text(message))
        for call in message.get("tool_calls") or []:
            function = call.get("function") or {}
            total += len(function.get("name") or "") + len(function.get("arguments") or "")
    return total


def estimate_tokens(chars: int) -> int:
    """A rough count when the backend gives none: about four characters a token, at least 1."""
    return max(1, math.ceil(chars / CHARS_PER_TOKEN))


def estimate_usage(
    messages: list[dict], content: str | None, reasoning: str | None, tool_calls: list[dict] | None = None
) -> dict:
    completion_chars = len(content or "") + len(reasoning or "")
    for call in tool_calls or []:
        function = call.get("function") or {}
        completion_chars += len(function.get("name") or "") + len(function.get("arguments") or "")
    usage = {
        "prompt_tokens": estimate_tokens(messages_chars(messages)),
        "completion_tokens": estimate_tokens(completion_chars),
    }
    if reasoning:
        usage["reasoning_tokens"] = estimate_tokens(len(reasoning))
    return usage
