"""Backends turn a popped job into a reply.

A backend implements `generate(job, ctx) -> Reply`. It reports partial text through
`ctx.report()`, raises `JobCancelled` when `ctx` says the request was cancelled and
`JobFault(reason)` when the job cannot be done; any other exception is faulted by
the loop as "backend error: ...". Each backend module also knows what its backend
can honestly declare (the scripted one: what the operator says; the OpenAI one:
what a probe of the server shows).
"""

from __future__ import annotations

from typing import Protocol

from horde.bridge.context import JobContext
from horde.bridge.job import Job, Reply

BACKEND_NAMES = ("scripted", "openai")


class Backend(Protocol):
    def generate(self, job: Job, ctx: JobContext) -> Reply: ...
