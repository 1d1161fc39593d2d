"""Reading an OpenAI chat completions stream: SSE events, then deltas into one reply.

Servers differ in small ways: reasoning arrives as `reasoning_content` (llama.cpp,
DeepSeek) or `reasoning` (vLLM, Ollama, OpenRouter); tool call arguments arrive in
pieces keyed by `index`, or whole; usage comes in a last chunk without choices.
The accumulator takes all of these, and also a whole non-streamed response.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator

from horde.bridge.job import new_tool_call_id

DONE_MARKER = "[DONE]"


class StreamError(Exception):
    """The server reported an error inside the stream (after its 200 headers)."""


def iter_sse_data(lines: Iterable[str | bytes]) -> Iterator[str]:
    """The `data` of each SSE event, joined across its data lines; stops at `[DONE]`."""
    data: list[str] = []
    for raw in lines:
        line = raw.decode("utf-8", errors="replace") if isinstance(raw, bytes) else raw
        line = line.rstrip("\r\n")
        if not line:
            if data:
                payload, data = "\n".join(data), []
                if payload.strip() == DONE_MARKER:
                    return
                yield payload
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        if name == "data":
            data.append(value[1:] if value.startswith(" ") else value)
    if data:
        payload = "\n".join(data)
        if payload.strip() != DONE_MARKER:
            yield payload


def cached_prompt_tokens(usage: object, timings: object) -> int | None:
    """The prompt tokens the server read from its cache, when it says: OpenAI's
    `usage.prompt_tokens_details.cached_tokens`, else llama.cpp's `timings.cache_n`."""
    details = usage.get("prompt_tokens_details") if isinstance(usage, dict) else None
    for value in (
        details.get("cached_tokens") if isinstance(details, dict) else None,
        timings.get("cache_n") if isinstance(timings, dict) else None,
    ):
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            return value
    return None


class ChatStreamAccumulator:
    """The reply so far: content, reasoning, tool calls by index, finish reason, usage."""

    def __init__(self) -> None:
        self._content: list[str] = []
        self._reasoning: list[str] = []
        self._calls: dict[int, dict] = {}
        self.finish_reason: str | None = None
        self.usage: dict | None = None
        #: llama.cpp's own counts (its `timings`: `prompt_n`, `cache_n`, ...), when the server sends them.
        self.timings: dict | None = None
        self.chunks = 0

    def feed_data(self, data: str) -> None:
        try:
            chunk = json.loads(data)
        except ValueError:
            return
        if isinstance(chunk, dict):
            self.feed(chunk)

    def feed(self, chunk: dict) -> None:
        """One stream chunk, or a whole response (its choices carry `message`, not `delta`)."""
        if chunk.get("error"):
            error = chunk["error"]
            raise StreamError(str(error.get("message") if isinstance(error, dict) else error))
        self.chunks += 1
        if isinstance(chunk.get("usage"), dict):
            self.usage = chunk["usage"]
        if isinstance(chunk.get("timings"), dict):
            self.timings = chunk["timings"]
        for choice in chunk.get("choices") or []:
            if choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or choice.get("message") or {}
            if isinstance(delta.get("content"), str):
                self._content.append(delta["content"])
            reasoning = delta.get("reasoning_content") or delta.get("reasoning")
            if isinstance(reasoning, str):
                self._reasoning.append(reasoning)
            for position, call in enumerate(delta.get("tool_calls") or []):
                self._feed_call(call, position)
            if choice.get("finish_reason"):
                self.finish_reason = choice["finish_reason"]

    def _feed_call(self, call: dict, position: int) -> None:
        index = call.get("index", position)
        slot = self._calls.setdefault(index, {"id": None, "name": "", "arguments": ""})
        if call.get("id"):
            slot["id"] = call["id"]
        function = call.get("function") or {}
        name = function.get("name")
        if name and name != slot["name"]:
            slot["name"] += name
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            slot["arguments"] += arguments
        elif arguments is not None:  # Ollama-style: the arguments as an object
            slot["arguments"] = json.dumps(arguments)

    @property
    def content(self) -> str:
        return "".join(self._content)

    @property
    def reasoning(self) -> str:
        return "".join(self._reasoning)

    def tool_calls(self) -> list[dict]:
        """OpenAI-shaped calls in index order; missing ids are made up, empty arguments are `{}`."""
        calls = []
        for index in sorted(self._calls):
            slot = self._calls[index]
            calls.append(
                {
                    "id": slot["id"] or new_tool_call_id(),
                    "type": "function",
                    "function": {"name": slot["name"], "arguments": slot["arguments"] or "{}"},
                }
            )
        return calls
