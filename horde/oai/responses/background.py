"""Background responses (`background: true`): answered at once, then polled, streamed from any event, cancelled.

Every process answers for every background response from the database alone (decision 0031): its record
(horde/background/records.py, with this dialect's recipe.py), its chat request, and for a streamed one the text
each progress post added (horde/background/progress_log.py). No connection holds the request, so a dropped one
cancels nothing; a retry with the same Idempotency-Key, or the SDK's retry of the same body, joins the request
instead of queueing a second one. Once the request ended, the response it ended with is kept as a stored
response (store.py), which GET, previous_response_id and item references read from then on.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Protocol

from flask import Response
from werkzeug.datastructures import Headers

from horde import errors
from horde.accounts.identity import Identity
from horde.background import cancel as cancelling
from horde.background import follow, records
from horde.background.models import BackgroundRequest
from horde.chat import request_rows, service
from horde.chat.models import DONE, FINAL_STATES, ChatRequest, new_id
from horde.http.client_address import client_address
from horde.oai import auth, conversation, idempotency, ignored, stream
from horde.oai import errors as oai_errors
from horde.oai.responses import answer, recipe, store
from horde.oai.responses.background_events import BackgroundWriter
from horde.oai.responses.models import StoredResponse
from horde.storage.settle import settle

if TYPE_CHECKING:
    from horde.oai.screening import ScreenedRequest
    from horde.runtime import Runtime

STAINLESS_RETRY_HEADER = "x-stainless-retry-count"
#: Before the first event (a resumed stream may have none to send yet): the headers go out at once.
OPENING_COMMENT = b": horde background\n\n"


class BackgroundCall(Protocol):
    """What a screened POST /v1/responses call (call.py's ResponsesCall) hands this module."""

    runtime: Runtime
    body: dict
    screened: ScreenedRequest
    digest: str
    shape: answer.Shape
    conversation: list[dict]
    inherited_conversation: str | None

    def conversation_key(self, headers: Headers) -> str | None: ...


def answer_call(call: BackgroundCall, user: Identity, headers: Headers, environ: dict) -> Response:
    """POST /v1/responses with `background: true`: the response `queued` (or as it stands, for a retry that
    joins its request), or with `stream: true` its events from the first."""
    runtime = call.runtime
    conversation.attach(call.screened.native, call.conversation_key(headers))
    key = idempotency.check_key(headers.get(idempotency.IDEMPOTENCY_HEADER))
    address = client_address(environ, runtime.settings.trusted_proxy_hops)
    key, digest = idempotency.scoped_for(user.anonymous, key, call.digest, address)
    request_id = None
    if key is not None:
        request_id = idempotency.claim(runtime, user.id, key, digest).request_id
    elif _retry_count(headers) > 0:
        request_id = idempotency.retried_request(runtime, user.id, digest)
    kept = recipe.to_json(recipe.of(call.body, call.shape, call.conversation))
    if request_id is None:
        request = _create(call, user, headers, key, digest, address, kept)
    else:
        records.write(runtime, user.id, answer.response_id(request_id), request_id, kept)  # if a crash lost it
        joined = service.read(runtime, request_id)
        if joined is None:
            raise errors.RequestNotFound(f"The request {request_id} is gone.")
        request = joined
    named = ignored.headers(call.screened.ignored, request.context_adjustments)
    if call.screened.stream:
        result = _stream_response(runtime, user.id, request, recipe.from_json(kept), after=-1, headers=named)
    else:
        body = _current(runtime, user.id, recipe.from_json(kept), request)
        result = oai_errors.response(body, 200, dict(named, **{"x-request-id": request.id}))
    request_id = request.id
    result.call_on_close(lambda: _delivered(runtime, request_id))
    return result


def _create(
    call: BackgroundCall,
    user: Identity,
    headers: Headers,
    key: str | None,
    digest: str,
    address: str,
    kept: dict,
) -> ChatRequest:
    """The record first, then the request: a request never runs without its record."""
    runtime = call.runtime
    request_id = new_id()
    response_id = answer.response_id(request_id)
    records.write(runtime, user.id, response_id, request_id, kept)
    try:
        request = service.create(
            runtime,
            user,
            call.screened.native,
            client_agent=auth.client_agent(headers),
            model_param=call.screened.model_param,
            body_hash=digest,
            client_address=address,
            request_id=request_id,
            inherited_conversation=call.inherited_conversation,
            keep_progress=call.screened.stream,
        )
    except Exception as exc:
        stored = isinstance(exc, errors.ServiceUnavailable) and exc.maybe_committed
        if not stored:
            settle(
                f"forgetting the refused background response {response_id}",
                lambda: records.forget(runtime, response_id),
            )
            if key is not None:
                settle("releasing an Idempotency-Key", lambda: idempotency.release(runtime, user.id, key))
        raise
    if key is not None:
        idempotency.bind(runtime, user.id, key, request.id)
    return request


def retrieve(runtime: Runtime, user: Identity, response_id: str) -> dict:
    """GET /v1/responses/{id}: the stored response, or a background response as it stands."""
    return load_settled(runtime, user.id, response_id, "response_id", in_progress_ok=True).body


def load_settled(
    runtime: Runtime, user_id: int, response_id: str, param: str, *, in_progress_ok: bool = False
) -> StoredResponse:
    """The user's stored response; a background response that ended is stored first. One that has not ended
    is refused (400 response_in_progress), or with `in_progress_ok` answered as it stands (not stored)."""
    try:
        return store.load(runtime, user_id, response_id, param)
    except errors.ResponseNotFound:
        record = records.find(runtime, user_id, response_id)
        if record is None:
            raise
        request = _as_polled(runtime, record.request_id)
        if request is None:
            raise
    body = _current(runtime, user_id, recipe.from_json(record.recipe), request)
    if body["status"] in ("queued", "in_progress"):
        if not in_progress_ok:
            raise errors.ResponseInProgress(
                f"Previous response with id '{response_id}' is still in progress.", param=param
            )
        return StoredResponse(id=response_id, user_id=user_id, request_id=request.id, body=body, conversation=[])
    return store.load(runtime, user_id, response_id, param)


def stream_events(runtime: Runtime, user: Identity, response_id: str, after: int) -> Response:
    """GET /v1/responses/{id}?stream=true&starting_after=N: the events after N, then the live rest."""
    record, request = _background(runtime, user, response_id, "Cannot stream a synchronous response.", whole=True)
    kept = recipe.from_json(record.recipe)
    return _stream_response(
        runtime, user.id, request, kept, after, ignored.headers(kept.ignored, request.context_adjustments)
    )


def cancel(runtime: Runtime, user: Identity, response_id: str) -> dict:
    """POST /v1/responses/{id}/cancel: the response as it ended (idempotent: a second cancel answers the same)."""
    _, request = _background(runtime, user, response_id, "Cannot cancel a synchronous response.")
    if request.state not in FINAL_STATES:
        cancelling.cancel(runtime, request.id)
    return load_settled(runtime, user.id, response_id, "response_id").body


def forget(runtime: Runtime, user: Identity, response_id: str) -> bool:
    """DELETE of a background response: a request still running is cancelled (charged as a cancel), then its
    record goes. False when the user has no background response of that id."""
    record = records.find(runtime, user.id, response_id)
    if record is None:
        return False
    cancelling.cancel(runtime, record.request_id)
    records.forget(runtime, response_id)
    return True


def _background(
    runtime: Runtime, user: Identity, response_id: str, synchronous: str, *, whole: bool = False
) -> tuple[BackgroundRequest, ChatRequest]:
    """The user's background response and its request (`whole`: with its payload, as polled otherwise); a stored
    response created without `background` is refused with `synchronous`, as OpenAI refuses it (400)."""
    record = records.find(runtime, user.id, response_id)
    read = service.read if whole else _as_polled
    request = read(runtime, record.request_id) if record is not None else None
    if record is None or request is None:
        store.load(runtime, user.id, response_id, "response_id")  # 404 unless it is a stored synchronous response
        raise errors.ResponseNotBackground(synchronous, param="response_id")
    return record, request


def _as_polled(runtime: Runtime, request_id: str) -> ChatRequest | None:
    """The request's row without its payload (the prompt, possibly large) until it ended: a poll's read."""
    with runtime.db.read() as session:
        return request_rows.follow_request(session, request_id)


def _current(runtime: Runtime, user_id: int, kept: recipe.Recipe, request: ChatRequest) -> dict:
    """The response as it stands: queued, in progress, or (ended) the response its events end with, stored."""
    if request.state not in FINAL_STATES:
        result = answer.skeleton(request, kept.body, "in_progress" if request.attempts else "queued")
        result["model"] = request.models[0]
        return result
    final = _render_final(runtime, user_id, kept, request)
    ended_with = kept.conversation + ([answer.assistant_message(request)] if request.state == DONE else [])
    store.save(runtime, user_id, request.id, final, ended_with)
    return final


def _render_final(runtime: Runtime, user_id: int, kept: recipe.Recipe, request: ChatRequest) -> dict:
    """The response of the last event of the request's sequence, rendered from its kept progress."""
    writer = BackgroundWriter(request, kept.body, kept.shape(runtime, user_id))
    writer.opening_events()
    writer.entries(follow.every_entry(runtime, request.id))
    writer.finish(request)
    assert writer.final is not None, "a finished rendering has its last response"
    return writer.final


def _stream_response(
    runtime: Runtime, user_id: int, request: ChatRequest, kept: recipe.Recipe, after: int, headers: dict
) -> Response:
    events = _events(runtime, user_id, request, kept, after)

    def generate() -> Iterator[bytes]:
        yield OPENING_COMMENT
        yield from events

    response = Response(generate(), mimetype="text/event-stream", direct_passthrough=True)
    response.headers.update(headers)
    response.headers["x-should-retry"] = "false"
    response.headers["Cache-Control"] = "no-cache"
    response.headers["X-Accel-Buffering"] = "no"
    response.headers["x-request-id"] = request.id
    return response


def _events(runtime: Runtime, user_id: int, first: ChatRequest, kept: recipe.Recipe, after: int) -> Iterator[bytes]:
    """The events numbered above `after`, as the request's sequence has them, until its last (decision 0031).
    `first`: the request as read with its payload, which says whether its text streams live."""
    writer = BackgroundWriter(first, kept.body, kept.shape(runtime, user_id))
    chunks = writer.opening_events()
    request: ChatRequest | None = first
    for item in follow.follow(runtime, first.id, runtime.settings.oai_keepalive_s):
        if isinstance(item, follow.Quiet):
            yield stream.opening_comment(runtime, request or first)  # a keepalive, with the queue position
            continue
        request = item.request
        if request is None:
            return
        if request.attempts:
            chunks += writer.start()
        chunks += writer.entries(item.entries)
        if item.last:
            chunks += writer.finish(request)
        for number, chunk in writer.numbered(chunks):
            if number > after:
                yield chunk
        chunks = []
        if writer.ended:
            return


def _delivered(runtime: Runtime, request_id: str) -> None:
    """The answer went out: an SDK retry of the same body no longer joins this request."""
    settle(
        f"marking the background request {request_id} answered",
        lambda: idempotency.release_delivered(runtime, request_id),
    )


def _retry_count(headers: Headers) -> int:
    try:
        return int(headers.get(STAINLESS_RETRY_HEADER, "0"))
    except ValueError:
        return 0
