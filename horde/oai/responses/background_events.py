"""A background response's events: a pure function of what the database holds (decision 0031).

The sequence, numbered from 0 whichever process renders it and from whichever point a client resumes:

1. `response.created` and `response.queued`, each with the response `queued` (the model asked for);
2. `response.in_progress`, once a worker took the request (its `attempts`, which never go back, say so);
3. per kept progress entry (the text one progress post added, horde/background/progress_log.py), the deltas the
   foreground stream sends for a post (events.ResponsesWriter.relay), without its pacing pauses;
4. the end: the foreground stream's (`response.completed` or `response.incomplete` with the response, or an
   `error` event and `response.failed`); a cancelled response ends with an `error` event (ChatRequestCancelled)
   and `response.failed` carrying the response `cancelled`, with the text generated until the cancel.

The response of the last event is the response the request ends with: the one GET answers once it ended.
Nothing depends on when or how often a process read the request, so two renderings agree event for event (an
`encrypted_content` is sealed afresh each time: each opens alike).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from horde import errors
from horde.chat.models import CANCELLED, ChatRequest
from horde.oai import stream
from horde.oai.errors import cancelled_error
from horde.oai.responses import answer
from horde.oai.responses.events import ResponsesWriter


class BackgroundWriter(ResponsesWriter):
    def __init__(self, request: ChatRequest, body: dict, shape: answer.Shape):
        """`request` as read when the rendering starts, with its payload (whether its text streams live)."""
        super().__init__(request, body, shape, self._completed)
        self.started = False
        #: The sequence ended (its last event written); `final` is the response that event carries.
        self.ended = False
        self.final: dict | None = None
        self._job: str | None = None
        self._ending: ChatRequest | None = None

    def numbered(self, chunks: list[bytes]) -> list[tuple[int, bytes]]:
        """The events just written, with their sequence numbers (each writes one, in order)."""
        first = self.sequence - len(chunks)
        return [(first + index, chunk) for index, chunk in enumerate(chunks)]

    def lifecycle(self, status: str) -> dict:
        """The response without output, as the created, queued and in-progress events carry it: the model asked
        for, not the one a worker serves, which a rendering may not know yet."""
        result = answer.skeleton(self.request, self.body, status)
        result["model"] = self.request.models[0]
        return result

    def opening_events(self) -> list[bytes]:
        queued = self.lifecycle("queued")
        return [self.event("response.created", response=queued), self.event("response.queued", response=queued)]

    def start(self) -> list[bytes]:
        if self.started:
            return []
        self.started = True
        return [self.event("response.in_progress", response=self.lifecycle("in_progress"))]

    def entries(self, entries: Iterable[Any]) -> list[bytes]:
        """The events of kept progress entries (rows with job_id, content and reasoning, the text each added)."""
        out = self.start()
        for entry in entries:
            if self.ended:
                break
            if self._job is not None and entry.job_id != self._job:  # another worker started over
                if self.streamed_chars:
                    out += self.diverge(stream.RESTART_AFTER_TEXT)
                    break
                self.reasoning = self.content = ""
            self._job = entry.job_id
            if self.live:
                self.reasoning += entry.reasoning
                self.content += entry.content
                out += self.relay(entry.reasoning, entry.content)
        return out

    def finish(self, request: ChatRequest) -> list[bytes]:
        """The last events, from the request as it ended (its payload read); none when the sequence ended already
        (its kept progress ended it)."""
        if self.ended:
            return []
        out = self.start() if request.attempts else []
        self._ending, self.ended = request, True
        if request.state == CANCELLED and request.fault_rc is None:  # the client's cancel
            self.final = answer.cancelled_object(request, self.body, self.shape)
            error = cancelled_error(request)
            return out + [
                self.event("error", code=error.rc, message=error.message, param=None),
                self.event("response.failed", response=self.final),
            ]
        return out + super().finish(request)

    def failure(self, error: errors.HordeError) -> list[bytes]:
        request = self._ending or self.request
        self.ended = True
        self.final = answer.failed_object(request, self.body, f"{error.message} ({error.rc}, request {request.id})")
        if self._ending is None:  # ended by its kept progress: the request as read when the rendering started
            self.final["model"] = self.request.models[0]
        return [
            self.event("error", code=error.rc, message=error.message, param=error.param),
            self.event("response.failed", response=self.final),
        ]

    def _completed(self, request: ChatRequest) -> dict:
        self.final = answer.response_object(request, self.body, self.shape)
        return self.final
