"""One POST /v1/completions call: screen, attach or create a text request, then answer as JSON or SSE.

The chat front's discipline on text jobs: screening and the gap checks before anything
is queued, Idempotency-Key and safe SDK retries (horde/oai/idempotency.py on text rows),
keepalive comments with the queue position, and a cancel when the client goes (after
the drop grace, unless another holder waits): generations already submitted stay
charged, running ones end uncharged.
"""

from __future__ import annotations

import functools
import itertools
from typing import TYPE_CHECKING, Any, cast

from flask import Response, stream_with_context

from horde import errors
from horde.http.client_address import client_address
from horde.http.client_connection import client_gone
from horde.oai import auth, idempotency, ignored, stream, text_completion
from horde.oai import errors as oai_errors
from horde.oai.chat import _release_delivered, _retry_count
from horde.oai.screening import screen_completion_request
from horde.oai.text_waiter import Failed, Finished, FirstRead, Generated, Keepalive, watch
from horde.text import fail_fast, service, views
from horde.text.models import DONE, FINAL_STATES, TextRequest

if TYPE_CHECKING:
    from werkzeug.datastructures import Headers

    from horde.accounts.identity import Identity
    from horde.accounts.models import User
    from horde.runtime import Runtime

JSON_WAIT_TICK_S = 1.0


def _error(error: errors.HordeError, request_id: str, headers: dict) -> Response:
    """An error after the request was held: x-should-retry false, the request id in metadata."""
    result = oai_errors.horde_error_response(error, request_id, held=True)
    result.headers.update(headers)
    return result


def _cancel_running(runtime, request_id: str) -> None:
    service.cancel(runtime, request_id, running=True)


class CompletionCall:
    def __init__(self, runtime: Runtime, body: dict):
        self.runtime = runtime
        self.screened = screen_completion_request(body)
        self.digest = idempotency.body_hash(body)

    def answer(self, user: User | Identity, headers: Headers, environ: dict) -> Response:
        key = idempotency.check_key(headers.get(idempotency.IDEMPOTENCY_HEADER))
        address = client_address(environ, self.runtime.settings.trusted_proxy_hops)
        key, self.digest = idempotency.scoped_for(user.anonymous, key, self.digest, address)
        request_id, replayed = None, False
        if key is not None:
            request_id = idempotency.claim(self.runtime, user.id, key, self.digest).request_id
        elif _retry_count(headers) > 0:
            request_id = idempotency.retried_request(self.runtime, user.id, self.digest, TextRequest)
        if request_id is not None:
            idempotency.hold(self.runtime, request_id, +1, TextRequest)
            attached = service.read(self.runtime, request_id)
            replayed = key is not None and attached is not None and attached.state in FINAL_STATES
        else:
            request_id = self._create(user, headers, key, address)
        watcher = watch(
            self.runtime,
            request_id,
            availability_mode=self.screened.availability_mode,
            tick_s=None if self.screened.stream else JSON_WAIT_TICK_S,
        )
        extra = {idempotency.REPLAYED_HEADER: "true"} if replayed else {}
        extra.update(ignored.headers(self.screened.ignored, None))
        if self.screened.stream:
            return self._stream(request_id, watcher, extra)
        return self._json(request_id, watcher, environ, extra)

    def _create(self, user: User | Identity, headers: Headers, key: str | None, address: str) -> str:
        options = fail_fast.FrontOptions(
            model_param=self.screened.model_param,
            availability_mode=self.screened.availability_mode,
            max_kudos=self.screened.max_kudos,
            penalties=self.screened.penalties,
        )
        try:
            admitted = service.create(
                self.runtime,
                user,
                self.screened.native,
                client_agent=auth.client_agent(headers),
                body_hash=self.digest,
                holders=1,
                front=options,
                client_address=address,
            )
        except Exception:
            if key is not None:
                idempotency.release(self.runtime, user.id, key)
            raise
        request = admitted.request
        assert request is not None  # the front never sends dry_run
        if key is not None:
            idempotency.bind(self.runtime, user.id, key, request.id)
        return request.id

    def _release(self, request_id: str, *, gone: bool, delivered: bool = False) -> None:
        if gone:
            idempotency.abandon(self.runtime, request_id, table=TextRequest, cancel=_cancel_running)
        elif delivered:
            idempotency.release_delivered(self.runtime, request_id, TextRequest)
        else:
            idempotency.hold(self.runtime, request_id, -1, TextRequest)

    def _json(self, request_id, watcher, environ, headers) -> Response:
        gone = released_on_close = False
        try:
            for event in watcher:
                if isinstance(event, Failed):
                    return _error(event.error, request_id, headers)
                if client_gone(environ):
                    gone = True
                    return _error(errors.ChatRequestCancelled("The client closed the connection."), request_id, {})
                if isinstance(event, Finished):
                    response = self._final_json(event.request, headers)
                    response.call_on_close(functools.partial(_release_delivered, self.runtime, request_id, TextRequest))
                    released_on_close = True
                    return response
        finally:
            watcher.close()
            if not released_on_close:
                self._release(request_id, gone=gone)
        return _error(errors.RequestNotFound("The request ended without an answer."), request_id, headers)

    def _final_json(self, request, headers) -> Response:
        if request.state != DONE:
            return _error(ended_error(request), request.id, headers)
        with self.runtime.db.read() as session:
            jobs = views.submitted_jobs(session, request.id)
        body = text_completion.text_completion(request, jobs, self.screened.ignored)
        return oai_errors.response(body, 200, dict(headers, **{"x-request-id": request.id}))

    def _stream(self, request_id, watcher, headers) -> Response:
        first = next(watcher)
        if isinstance(first, Failed):
            self._release(request_id, gone=False)
            return _error(first.error, request_id, headers)
        if isinstance(first, Finished) and first.request.state != DONE:
            self._release(request_id, gone=False)
            return _error(ended_error(first.request), request_id, headers)
        events = itertools.chain([] if isinstance(first, FirstRead) else [first], watcher)
        runtime, include_usage, named = self.runtime, self.screened.include_usage, self.screened.ignored

        def generate():
            finished, sent = False, cast(list[str], [])
            try:
                yield stream.keepalive_comment(Keepalive(0, 0))  # the headers go out now
                for event in events:
                    if isinstance(event, Keepalive):
                        yield stream.keepalive_comment(event)
                    elif isinstance(event, Generated):
                        yield from _new_choices(runtime, request_id, sent)
                    elif isinstance(event, Finished):
                        yield from _new_choices(runtime, request_id, sent)
                        yield from _finish(runtime, event.request, include_usage, named)
                        finished = True
                        return
                    elif isinstance(event, Failed):
                        yield from stream.error_event(event.error, request_id)
                        finished = True
                        return
            finally:
                watcher.close()
                self._release(request_id, gone=not finished, delivered=finished)

        response = Response(stream_with_context(generate()), mimetype="text/event-stream")
        response.headers.update(headers)
        response.headers.update(
            {
                "x-should-retry": "false",
                "Cache-Control": "no-cache",
                "X-Accel-Buffering": "no",
                "x-request-id": request_id,
            }
        )
        return response


def _new_choices(runtime, request_id: str, sent: list[str]):
    """Each generation submitted since the last call, as one chunk with its whole text and finish_reason.

    Text workers post no progress, so a generation arrives whole; one chunk also keeps each chunk valid
    against OpenAI's CreateCompletionResponse, whose finish_reason is a required string."""
    with runtime.db.read() as session:
        request = session.get(TextRequest, request_id)
        jobs = views.submitted_jobs(session, request_id)
    for job in jobs:
        if job.id in sent:
            continue
        index = len(sent)
        sent.append(job.id)
        yield stream.data_event(text_completion.envelope(request, [job], [text_completion.choice(request, job, index)]))


def _finish(runtime, request, include_usage: bool, named: ignored.Ignored):
    if request.state != DONE:
        yield from stream.error_event(ended_error(request), request.id)
        return
    if include_usage:
        with runtime.db.read() as session:
            jobs = views.submitted_jobs(session, request.id)
        body = text_completion.envelope(request, jobs, [])
        body["usage"] = text_completion.usage(request, jobs)
        body["x_horde"] = text_completion.x_horde(request, jobs, named)
        yield stream.data_event(body)
    yield stream.DONE_EVENT


def ended_error(request: Any) -> errors.HordeError:
    """The error of a text request (a row, or a TextRequest) that ended without its answer: its fault, or its
    cancel's reason (the chat errors read the same columns)."""
    if request.state == "faulted":
        return oai_errors.faulted_error(request)
    return oai_errors.cancelled_error(request)
