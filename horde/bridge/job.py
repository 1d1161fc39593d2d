"""A popped job, the reply a backend makes for it, and the ways a job can end early.

Backends see a `Job` and return a `Reply`; they end a job early by raising
`JobCancelled` (the request was cancelled: submit nothing) or `JobFault`
(the job cannot be done: tell the Horde why, so it restarts it elsewhere).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

FINISH_REASONS = ("stop", "length", "tool_calls")
DEFAULT_JOB_TTL_S = 150


class JobCancelled(Exception):
    """The Horde answered a progress post with cancel, or the worker is shutting down."""


class JobFault(Exception):
    """The job cannot be done; `reason` goes to the Horde's fault endpoint."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


@dataclass
class Job:
    id: str
    model: str
    ttl_s: float
    payload: dict

    @classmethod
    def from_pop(cls, body: dict) -> Job:
        payload = body.get("payload")
        if not isinstance(payload, dict) or not isinstance(payload.get("messages"), list):
            raise JobFault("malformed job: the payload has no messages list")
        ttl = body.get("ttl")
        return cls(
            id=str(body["id"]),
            model=str(body.get("model") or ""),
            ttl_s=float(ttl) if isinstance(ttl, (int, float)) and ttl > 0 else DEFAULT_JOB_TTL_S,
            payload=payload,
        )

    @property
    def messages(self) -> list[dict]:
        return self.payload.get("messages") or []

    @property
    def tools(self) -> list[dict]:
        return self.payload.get("tools") or []

    @property
    def response_format_type(self) -> str:
        """`text` when no format applies, else the format's type."""
        fmt = self.payload.get("response_format")
        if isinstance(fmt, dict) and fmt.get("type"):
            return str(fmt["type"])
        return "text"

    @property
    def json_schema(self) -> dict | bool | None:
        fmt = self.payload.get("response_format")
        if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
            schema = (fmt.get("json_schema") or {}).get("schema")
            return schema if isinstance(schema, (dict, bool)) else {}
        return None

    @property
    def is_plain_text(self) -> bool:
        """Progress is only meaningful for plain text: no tools, no structured format."""
        return not self.tools and self.response_format_type == "text"

    def forced_function(self) -> str | None:
        choice = self.payload.get("tool_choice")
        if isinstance(choice, dict):
            return ((choice.get("function") or {}).get("name")) or None
        return None


@dataclass
class Reply:
    content: str | None
    finish_reason: str = "stop"
    reasoning_content: str | None = None
    tool_calls: list[dict] = field(default_factory=list)
    usage: dict = field(default_factory=dict)

    def submit_body(self, job_id: str) -> dict:
        body: dict[str, object] = {
            "id": job_id,
            "content": self.content,
            "finish_reason": self.finish_reason,
            "usage": dict(self.usage),
        }
        if self.reasoning_content:
            body["reasoning_content"] = self.reasoning_content
        if self.tool_calls:
            body["tool_calls"] = [dict(call) for call in self.tool_calls]
        return body


def new_tool_call_id() -> str:
    return f"call_{uuid.uuid4().hex[:24]}"


def tool_call(name: str, arguments: str, call_id: str | None = None) -> dict:
    """One OpenAI-shaped tool call; `arguments` is the JSON text, as OpenAI sends it."""
    return {"id": call_id or new_tool_call_id(), "type": "function", "function": {"name": name, "arguments": arguments}}
