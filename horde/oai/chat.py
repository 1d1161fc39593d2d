"""One POST /v1/chat/completions call: screen, attach or create, then answer as JSON or SSE."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from flask import Response
from werkzeug.datastructures import Headers

from horde import errors
from horde.accounts.identity import Identity
from horde.chat import admission, service, tiers
from horde.chat.models import DONE, FAULTED, FINAL_STATES, ChatRequest, new_id
from horde.http.client_address import client_address
from horde.http.client_connection import client_gone
from horde.http.contract import DEFAULT_AVAILABILITY_MODE
from horde.oai import auth, completion, conversation, idempotency, ignored, stream
from horde.oai import errors as oai_errors
from horde.oai.observed import observed
from horde.oai.screening import ScreenedRequest, screen_chat_request
from horde.oai.waiter import Created, Failed, Finished, FirstRead, channels, watch
from horde.storage.settle import settle

if TYPE_CHECKING:
    from horde.runtime import Runtime

JSON_WAIT_TICK_S = 1.0
STAINLESS_RETRY_HEADER = "x-stainless-retry-count"
ENDPOINT = "chat.completions"


class ChatCall:
    def __init__(self, runtime: Runtime, body: dict, screened: ScreenedRequest):
        """`screened` is the chat contract's ScreenedRequest; dialects build it from their own body."""
        self.runtime = runtime
        self.body = body
        self.screened = screened
        self.digest = idempotency.body_hash(body)
        #: The stored key of the conversation this call continues when it names none (horde/oai/conversation.py).
        self.inherited_conversation: str | None = None

    @classmethod
    def screen(cls, runtime: Runtime, body: Any) -> ChatCall:
        if isinstance(body, dict):
            admission.check_message_count(body.get("messages"), runtime.settings)
        return cls(runtime, body, screen_chat_request(body))

    def conversation_key(self, headers: Headers) -> str | None:
        """The conversation the client names (horde/oai/conversation.py)."""
        return conversation.of_openai(self.body, headers)

    def answer(self, user: Identity, headers: Headers, environ: dict) -> Response:
        conversation.attach(self.screened.native, self.conversation_key(headers))
        key = idempotency.check_key(headers.get(idempotency.IDEMPOTENCY_HEADER))
        address = client_address(environ, self.runtime.settings.trusted_proxy_hops)
        key, self.digest = idempotency.scoped_for(user.anonymous, key, self.digest, address)
        replayed = False
        request_id = None
        if key is not None:
            claim = idempotency.claim(self.runtime, user.id, key, self.digest)
            request_id = claim.request_id
        elif _retry_count(headers) > 0:
            request_id = idempotency.retried_request(self.runtime, user.id, self.digest)
        holding = False
        created = None
        try:
            if request_id is not None:
                idempotency.hold(self.runtime, request_id, +1)
                holding = True
                stored = service.read(self.runtime, request_id) if key is not None else None
                replayed = stored is not None and stored.state in FINAL_STATES
            else:
                created = self._create(user, headers, key, address)
                request_id = created.request.id
                holding = True
            return self._respond(request_id, environ, replayed, created)
        except errors.ServiceUnavailable as error:
            raise self._outage(error, request_id, holding) from None

    def _outage(
        self, error: errors.ServiceUnavailable, request_id: str | None, holding: bool
    ) -> errors.ServiceUnavailable:
        """The database went away while this call followed (or created) a request: the Horde may hold it.

        The holder is released once the database is back, as if the client had dropped its connection.
        """
        if request_id is not None or error.maybe_committed:
            error.should_retry = False
        if request_id is not None:
            error.metadata.setdefault("request_id", request_id)
            if holding:
                settle(f"releasing the request {request_id}", lambda: idempotency.abandon(self.runtime, request_id))
        return error

    def _create(self, user, headers, key, address: str) -> Created:
        """Create the request, listening to its channel from before the commit (so the waiter skips a read)."""
        request_id = new_id()
        subscription = self.runtime.bus.subscribe(*channels(request_id, progress=self.screened.stream))
        try:
            request = service.create(
                self.runtime,
                user,
                self.screened.native,
                client_agent=auth.client_agent(headers),
                model_param=self.screened.model_param,
                body_hash=self.digest,
                holders=1,
                client_address=address,
                request_id=request_id,
                inherited_conversation=self.inherited_conversation,
                tier=tiers.named(self.screened.service_tier),
            )
        except Exception as exc:
            subscription.close()
            stored = isinstance(exc, errors.ServiceUnavailable) and exc.maybe_committed
            if key is not None and not stored:
                settle("releasing an Idempotency-Key", lambda: idempotency.release(self.runtime, user.id, key))
            raise
        if key is not None:
            try:
                idempotency.bind(self.runtime, user.id, key, request.id)
            except BaseException:
                subscription.close()
                raise
        return Created(request, subscription)

    def _respond(self, request_id: str, environ, replayed: bool, created: Created | None = None) -> Response:
        mode = self.screened.native.get("availability_mode", DEFAULT_AVAILABILITY_MODE)
        tick_s = None if self.screened.stream else JSON_WAIT_TICK_S
        watching = watch(
            self.runtime,
            request_id,
            availability_mode=mode,
            tick_s=tick_s,
            created=created,
            progress=self.screened.stream,
        )
        watcher = observed(watching, ENDPOINT, environ, request_id)
        first = next(watcher)
        headers = {idempotency.REPLAYED_HEADER: "true"} if replayed else {}
        if self.screened.stream:
            return self._stream(request_id, first, watcher, headers, created)
        return self._json(request_id, first, watcher, environ, headers)

    def _json(self, request_id, first, watcher, environ, headers) -> Response:
        release = True  # this call's holder, unless abandoned, delivered, or left to answer() on an outage
        events = itertools.chain([first], watcher)
        runtime = self.runtime
        try:
            for event in events:
                if isinstance(event, Finished):
                    if client_gone(environ):
                        release = False
                        settle(f"releasing the request {request_id}", lambda: idempotency.abandon(runtime, request_id))
                        return self.error_response(
                            errors.ChatRequestCancelled("The client closed the connection."), request_id, {}
                        )
                    response = self._final_json(event.request, headers)
                    release = False
                    response.call_on_close(lambda: _release_delivered(runtime, request_id))
                    return response
                if isinstance(event, Failed):
                    return self.error_response(event.error, request_id, headers)
                if client_gone(environ):
                    release = False
                    settle(f"releasing the request {request_id}", lambda: idempotency.abandon(runtime, request_id))
                    return self.error_response(
                        errors.ChatRequestCancelled("The client closed the connection."), request_id, {}
                    )
        except errors.ServiceUnavailable:
            release = False
            raise
        finally:
            watcher.close()
            if release:
                settle(f"releasing the request {request_id}", lambda: idempotency.hold(runtime, request_id, -1))
        return self.error_response(errors.RequestNotFound("The request ended without an answer."), request_id, headers)

    def _final_json(self, request, headers) -> Response:
        if request.state == DONE:
            body = self.answer_body(request)
            return oai_errors.response(body, 200, dict(headers, **self.named(request), **{"x-request-id": request.id}))
        error = oai_errors.faulted_error(request) if request.state == FAULTED else oai_errors.cancelled_error(request)
        return self.error_response(error, request.id, headers)

    def named(self, request: ChatRequest) -> dict[str, str]:
        """The headers naming what the screening ignored or lowered (and what admission lowered), every dialect's."""
        return ignored.headers(self.screened.ignored, request.context_adjustments)

    # The dialect's hooks: a dialect (the Responses API, Anthropic's Messages) overrides these and keeps the rest.

    def answer_body(self, request: ChatRequest) -> dict:
        """The JSON answer of a request that ended done."""
        return completion.chat_completion(request, self.screened.include_reasoning, self.screened.ignored)

    def error_response(self, error: errors.HordeError, request_id: str, headers: dict) -> Response:
        retry = error.should_retry is True  # server_shutting_down: the request stays held and a retry attaches
        result = oai_errors.horde_error_response(error, request_id, held=not retry)
        if retry:
            result.headers["x-should-retry"] = "true"
        result.headers.update(headers)
        return result

    def stream_state(self, request: ChatRequest) -> Any:
        """What one stream tracks; it has `diverged` and `streamed_chars` for the release below."""
        return stream.StreamState(
            request, self.screened.include_reasoning, self.screened.include_usage, self.screened.ignored
        )

    def stream_opening(self, request: ChatRequest, state: Any) -> bytes:
        """The first bytes, sent at once: the headers go out after the first status read."""
        return stream.opening_comment(self.runtime, request)

    def stream_chunks(self, state: Any, events: Iterable[object]) -> Iterator[bytes]:
        return stream.events(state, events)

    def _stream(self, request_id, first, watcher, headers, created: Created | None = None) -> Response:
        if isinstance(first, Failed):
            idempotency.hold(self.runtime, request_id, -1)
            return self.error_response(first.error, request_id, headers)
        if isinstance(first, Finished) and first.request.state != DONE:
            idempotency.hold(self.runtime, request_id, -1)
            return self._final_json(first.request, headers)
        request = created.request if created is not None else service.read(self.runtime, request_id)
        assert request is not None, "the stream holds its request"
        state = self.stream_state(request)
        events = itertools.chain([] if isinstance(first, FirstRead) else [first], watcher)
        runtime = self.runtime
        opening = self.stream_opening(request, state)
        # Made now (it runs only when iterated): the waiting stream then holds no reference to this call and its body.
        chunks = self.stream_chunks(state, events)

        def generate():
            finished = False
            try:
                yield opening  # sends the headers now, right after the first status read
                yield from chunks
                finished = True
            finally:
                watcher.close()
                _end_stream(runtime, request_id, state, finished)

        # No stream_with_context: the stream uses no request globals, and holding the request context for the
        # whole wait would cost every waiting stream its copy. direct_passthrough: the server iterates the
        # generator itself (it yields bytes), without werkzeug's two wrapping iterators on every stream's stack.
        response = Response(generate(), mimetype="text/event-stream", direct_passthrough=True)
        response.headers.update(headers)
        response.headers.update(self.named(request))
        response.headers["x-should-retry"] = "false"
        response.headers["Cache-Control"] = "no-cache"
        response.headers["X-Accel-Buffering"] = "no"
        response.headers["x-request-id"] = request_id
        return response


def _release_delivered(runtime: Runtime, request_id: str, table: idempotency.RequestTable = ChatRequest) -> None:
    """Run when the server closes the response, after its last byte went out: the client no longer waits for
    this write before it reads its answer."""
    settle(
        f"releasing the delivered request {request_id}",
        lambda: idempotency.release_delivered(runtime, request_id, table),
    )


def _end_stream(runtime: Runtime, request_id: str, state: Any, finished: bool) -> None:
    """Release the stream's holder: delivered when it ran to its end, abandoned otherwise."""
    release = f"releasing the streamed request {request_id}"
    if finished and getattr(state, "interrupted", False):
        settle(release, lambda: idempotency.hold(runtime, request_id, -1))  # held on the Horde for a retry elsewhere
    elif finished and state.diverged:
        settle(
            release, lambda: idempotency.abandon(runtime, request_id, streamed_chars=state.streamed_chars, grace_s=0)
        )
    elif finished and not getattr(state, "outage", False):
        settle(release, lambda: idempotency.release_delivered(runtime, request_id))
    else:  # the client went away, or the database did and the stream ended on service_unavailable
        settle(release, lambda: idempotency.abandon(runtime, request_id, streamed_chars=state.streamed_chars))


def _retry_count(headers) -> int:
    try:
        return int(headers.get(STAINLESS_RETRY_HEADER, "0"))
    except ValueError:
        return 0
