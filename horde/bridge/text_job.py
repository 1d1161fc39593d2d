"""A popped text job (the AI Horde's GenerationPayloadKobold) and the text made for it.

The AI Horde's contract for the returned text: it keeps the stop sequence it ended on,
and it is at most `max_length` tokens. `finish` applies both to what a backend made.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from horde.bridge.job import DEFAULT_JOB_TTL_S, JobFault

CHARS_PER_TOKEN = 4


@dataclass
class TextJob:
    ids: list[str]
    model: str
    ttl_s: float
    payload: dict

    @classmethod
    def from_pop(cls, body: dict) -> TextJob:
        payload = body.get("payload")
        ids = [str(item) for item in (body.get("ids") or [body.get("id")]) if item]
        if not isinstance(payload, dict) or not isinstance(payload.get("prompt"), str) or not ids:
            raise JobFault("malformed text job: no prompt or no ids")
        ttl = body.get("ttl")
        return cls(
            ids=ids,
            model=str(body.get("model") or ""),
            ttl_s=float(ttl) if isinstance(ttl, (int, float)) and ttl > 0 else DEFAULT_JOB_TTL_S,
            payload=payload,
        )

    @property
    def prompt(self) -> str:
        return self.payload["prompt"]

    @property
    def max_length(self) -> int:
        return int(self.payload.get("max_length") or 80)

    @property
    def stop_sequences(self) -> list[str]:
        return [stop for stop in self.payload.get("stop_sequence") or [] if isinstance(stop, str) and stop]


@dataclass
class TextReply:
    text: str
    finish_reason: str = "stop"
    completion_tokens: int | None = None
    seed: int = 0
    #: Prompt tokens the backend read from its cache, when it says.
    cached_tokens: int | None = None

    def submit_body(self, job_id: str) -> dict:
        body = {
            "id": job_id,
            "generation": self.text,
            "state": "ok",
            "seed": self.seed,
            "finish_reason": self.finish_reason,
        }
        if self.completion_tokens is not None:
            body["completion_tokens"] = self.completion_tokens
        if self.cached_tokens is not None:
            body["cached_tokens"] = self.cached_tokens
        return body


def first_stop(text: str, stops: list[str]) -> int | None:
    """The end of the earliest stop sequence in `text`, or None."""
    ends = [text.find(stop) + len(stop) for stop in stops if stop in text]
    return min(ends) if ends else None


def finish(text: str, job: TextJob, finish_reason: str = "stop", tokens: int | None = None) -> TextReply:
    """Cut at the first stop sequence (kept), then at max_length tokens."""
    end = first_stop(text, job.stop_sequences)
    if end is not None:
        text, finish_reason, tokens = text[:end], "stop", None
    limit_chars = job.max_length * CHARS_PER_TOKEN
    if len(text) > limit_chars and tokens is None:
        text, finish_reason = text[:limit_chars], "length"
    counted = tokens if tokens is not None else math.ceil(len(text) / CHARS_PER_TOKEN)
    return TextReply(
        text=text,
        finish_reason=finish_reason,
        completion_tokens=min(counted, job.max_length),
        seed=int(job.payload.get("seed") or 0),
    )
