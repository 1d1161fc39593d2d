"""What the dialect does for one line of a batch: the driver (horde/batches/driver.py) knows lines and files, the
dialect (horde/oai/batch_lines.py) knows how its endpoint screens, admits and answers a request. The driver is handed
a LineRunner, so that this package, below the dialects, never imports them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from horde.accounts.identity import Identity


@dataclass(frozen=True)
class LineWork:
    """One fed line: whose, for which endpoint, and what it asks."""

    batch_id: str
    endpoint: str
    line: int
    custom_id: str
    request_id: str
    body: dict
    user: Identity


@dataclass(frozen=True)
class Usage:
    input_tokens: int = 0
    cached_tokens: int = 0
    output_tokens: int = 0
    reasoning_tokens: int = 0


@dataclass(frozen=True)
class Outcome:
    """How a line ended: its `response` ({status_code, request_id, body}) and/or its `error` ({code, message}) as
    OpenAI's output line holds them; `ok` puts it in the output file, else in the error file."""

    ok: bool
    response: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    usage: Usage = field(default_factory=Usage)
    kudos: int = 0


@dataclass(frozen=True)
class Admitted:
    """The line's request is queued (now, or by an earlier try)."""


@dataclass(frozen=True)
class Retry:
    """A refusal that may pass (no worker online for the model, the database away): try again after `after_s`."""

    after_s: float
    why: str


class LineRunner(Protocol):
    """The dialect's part of a batch, bound to the process's runtime."""

    def admit(self, work: LineWork) -> Admitted | Retry | Outcome:
        """Screen the line's body as its endpoint screens a request and queue it as a batch line (flex, no free
        allowance, its id `work.request_id`); a refusal is the line's Outcome (its error line). A request of that id
        queued meanwhile (by another driver) is Admitted, never a second one."""
        ...

    def progress(self, endpoint: str, request_ids: list[str]) -> dict[str, bool]:
        """Of the requests that exist, whether each has ended (done, faulted, cancelled); one read for them all. A
        line whose request does not exist was not queued yet."""
        ...

    def outcome(self, work: LineWork, ending: str | None) -> Outcome:
        """The line's output, from its ended request, as its endpoint would answer it; a request the batch itself
        withdrew (`ending`: the batch was cancelled or expired) ends with that code."""
        ...

    def withdraw(self, endpoint: str, request_id: str, ending: str) -> bool | None:
        """Cancel the request if it still waits for a worker (one being generated goes on and is charged as any):
        True when withdrawn, False when it runs or ended, None when no such request exists."""
        ...
