"""OpenAI `text_completion` objects built from a text request and its generations.

Each generation is one choice, in the order they were submitted. Workers return the
text with the stop sequence it ended on (the AI Horde's contract); OpenAI's does not
contain it, so it is cut here.
"""

from __future__ import annotations

import calendar
from typing import TYPE_CHECKING

from horde.oai.completion import system_fingerprint
from horde.oai.ignored import Ignored

if TYPE_CHECKING:
    from collections.abc import Sequence

    from sqlalchemy import Row

    from horde.text.models import TextJob, TextRequest


def completion_id(request: TextRequest | Row) -> str:
    return "cmpl-" + request.id.replace("-", "")


def choice_text(request: TextRequest | Row, job: TextJob | Row) -> tuple[str, str]:
    """(text, finish_reason) of one generation as OpenAI answers it."""
    text = job.text or ""
    for stop in (request.params or {}).get("stop_sequence") or ():
        if stop and text.endswith(stop):
            return text[: -len(stop)], "stop"
    if job.finish_reason in ("stop", "length"):
        return text, job.finish_reason
    return text, "length" if job.tokens >= request.max_length else "stop"


def choice(request: TextRequest | Row, job: TextJob | Row, index: int) -> dict:
    text, reason = choice_text(request, job)
    return {"text": text, "index": index, "logprobs": None, "finish_reason": reason}


def usage(request: TextRequest | Row, jobs: Sequence[TextJob | Row]) -> dict:
    completion = sum(job.tokens for job in jobs)
    return {
        "prompt_tokens": request.prompt_tokens,
        "completion_tokens": completion,
        "total_tokens": request.prompt_tokens + completion,
        # The first generation's report, as x_horde names its worker: the prompt is counted once.
        "prompt_tokens_details": {
            "cached_tokens": min(jobs[0].cached_tokens or 0, request.prompt_tokens) if jobs else 0
        },
    }


def x_horde(request: TextRequest | Row, jobs: Sequence[TextJob | Row], ignored: Ignored | None = None) -> dict:
    first = jobs[0] if jobs else None
    return {
        "request_id": request.id,
        "worker_id": first.worker_id if first else None,
        "worker_name": first.worker_name if first else None,
        "model": first.model if first else None,
        "kudos": request.kudos_charged,
        "generations": [
            {
                "index": index,
                "worker_id": job.worker_id,
                "worker_name": job.worker_name,
                "model": job.model,
                "kudos": job.kudos,
            }
            for index, job in enumerate(jobs)
        ],
        "ignored_parameters": ignored.paths if ignored else [],
    }


def served_model(request: TextRequest | Row, jobs: Sequence[TextJob | Row]) -> str:
    return jobs[0].model if jobs else (request.models[0] if request.models else "")


def envelope(request: TextRequest | Row, jobs: Sequence[TextJob | Row], choices: list[dict]) -> dict:
    body = {
        "id": completion_id(request),
        "object": "text_completion",
        "created": calendar.timegm(request.created_at.timetuple()),
        "model": served_model(request, jobs),
        "choices": choices,
    }
    fingerprint = system_fingerprint(jobs[0].worker_id, jobs[0].model) if jobs else None
    if fingerprint is not None:
        body["system_fingerprint"] = fingerprint
    return body


def text_completion(request: TextRequest | Row, jobs: Sequence[TextJob | Row], ignored: Ignored | None = None) -> dict:
    body = envelope(request, jobs, [choice(request, job, index) for index, job in enumerate(jobs)])
    body["usage"] = usage(request, jobs)
    body["x_horde"] = x_horde(request, jobs, ignored)
    return body
