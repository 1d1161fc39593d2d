"""The lines of a batch as their endpoint serves them: the batch driver's LineRunner (horde/batches/runner.py).

A line is screened by its endpoint's own screening (ChatCall, ResponsesCall, CompletionCall: the same code as a
request to /v1/chat/completions, /v1/responses, /v1/completions), queued through the same services as a batch line
(flex, behind interactive requests; no free allowance; its own rate scope; `availability_mode` "wait", since a
batch has its window to wait in), and answered with the body its endpoint answers. A refusal is the line's error:
its `response` holds the status and OpenAI's error envelope the endpoint would have answered. Only a refusal that
may pass soon is tried again later: no worker online for the line's model, and the database away.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from werkzeug.datastructures import Headers

from horde import errors
from horde.batches import ending as batch_ending
from horde.batches.runner import Admitted, LineWork, Outcome, Retry, Usage
from horde.chat import service as chat_service
from horde.chat import tiers
from horde.chat.models import CANCELLED, DONE, FAULTED, FINAL_STATES, ChatRequest
from horde.oai import completion, conversation, text_completion
from horde.oai import errors as oai_errors
from horde.oai.chat import ChatCall
from horde.oai.completions import CompletionCall, ended_error
from horde.oai.responses import answer as responses_answer
from horde.oai.responses.call import ResponsesCall
from horde.oai.screening import ScreeningError
from horde.text import fail_fast, views
from horde.text import service as text_service
from horde.text.models import TextRequest

if TYPE_CHECKING:
    from horde.runtime import Runtime

CHAT, COMPLETIONS, RESPONSES = "/v1/chat/completions", "/v1/completions", "/v1/responses"
#: The Client-Agent of a batch line's request.
BATCH_CLIENT_AGENT = "horde-batch:1:batch"
#: A refusal that may pass: the line is tried again this long after.
RETRY_AFTER_S = 30.0
RETRIED_REFUSALS = (errors.NoEligibleWorker, errors.ServiceUnavailable)
#: A line waits in the queue as long as its batch's window lets it.
WAIT = "wait"


class OpenAILines:
    """The LineRunner of the OpenAI front's three endpoints, for the process's runtime."""

    def __init__(self, runtime: Runtime):
        self.runtime = runtime

    def admit(self, work: LineWork) -> Admitted | Retry | Outcome:
        runtime = self.runtime
        try:
            _ADMISSIONS[work.endpoint](runtime, work)
        except RETRIED_REFUSALS as refusal:
            if isinstance(refusal, errors.ServiceUnavailable) and refusal.maybe_committed:
                return Retry(0.0, refusal.message)  # it may be queued: the next turn looks
            return Retry(RETRY_AFTER_S, refusal.message)
        except errors.HordeError as refusal:  # ScreeningError included: the endpoint's own refusal
            return refused(work.request_id, refusal)
        except IntegrityError:  # another driver queued it a moment ago
            return Admitted()
        return Admitted()

    def progress(self, endpoint: str, request_ids: list[str]) -> dict[str, bool]:
        table: Any = TextRequest if endpoint == COMPLETIONS else ChatRequest
        with self.runtime.db.read() as session:
            found = session.execute(select(table.id, table.state).where(table.id.in_(request_ids)))
            return {request_id: state in FINAL_STATES for request_id, state in found}

    def outcome(self, work: LineWork, ending: str | None) -> Outcome:
        if work.endpoint == COMPLETIONS:
            return _text_outcome(self.runtime, work)
        return _chat_outcome(self.runtime, work)

    def withdraw(self, endpoint: str, request_id: str, ending: str) -> bool | None:
        reason = batch_ending.refusal(ending)
        if endpoint == COMPLETIONS:
            return text_service.withdraw(self.runtime, request_id, reason)
        return chat_service.withdraw(self.runtime, request_id, reason)


def refused(request_id: str, refusal: errors.HordeError) -> Outcome:
    """The error line of a request its endpoint refused: the status and the body the endpoint would answer."""
    body = oai_errors.from_horde_error(refusal, None if isinstance(refusal, ScreeningError) else request_id)
    if isinstance(refusal, ScreeningError):
        body["error"].pop("metadata", None)  # the front renders a screening refusal without it
    return Outcome(ok=False, response={"status_code": refusal.status, "request_id": request_id, "body": body})


def _refuse_stream(stream: bool) -> None:
    if stream:
        raise ScreeningError("A batch's request is answered whole: 'stream' is not served in a batch.", param="stream")


def _admit_chat(runtime: Runtime, work: LineWork) -> None:
    call = _chat_call(runtime, work)
    _refuse_stream(call.screened.stream)
    native = dict(call.screened.native, availability_mode=WAIT)
    conversation.attach(native, call.conversation_key(Headers()))
    chat_service.create(
        runtime,
        work.user,
        native,
        client_agent=BATCH_CLIENT_AGENT,
        model_param=call.screened.model_param,
        request_id=work.request_id,
        inherited_conversation=call.inherited_conversation,
        tier=tiers.BATCH_LINE,
    )


def _admit_text(runtime: Runtime, work: LineWork) -> None:
    screened = CompletionCall(runtime, dict(work.body)).screened
    _refuse_stream(screened.stream)
    options = fail_fast.FrontOptions(
        model_param=screened.model_param,
        availability_mode=WAIT,
        max_kudos=screened.max_kudos,
        penalties=screened.penalties,
    )
    text_service.create(
        runtime,
        work.user,
        screened.native,
        client_agent=BATCH_CLIENT_AGENT,
        front=options,
        tier=tiers.BATCH_LINE,
        request_id=work.request_id,
    )


def _chat_call(runtime: Runtime, work: LineWork) -> ChatCall:
    if work.endpoint == RESPONSES:
        return ResponsesCall.screen_for(runtime, dict(work.body), work.user)
    return ChatCall.screen(runtime, dict(work.body))


_ADMISSIONS: dict[str, Callable[[Any, LineWork], None]] = {
    CHAT: _admit_chat,
    RESPONSES: _admit_chat,
    COMPLETIONS: _admit_text,
}


def _chat_outcome(runtime: Runtime, work: LineWork) -> Outcome:
    request = chat_service.read(runtime, work.request_id)
    assert request is not None, "an ended line's request"
    if request.state != DONE:
        return _unanswered(
            request, oai_errors.faulted_error if request.state == FAULTED else oai_errors.cancelled_error
        )
    body = _chat_body(runtime, work, request)
    counted = completion.usage(request)
    usage = Usage(
        input_tokens=counted["prompt_tokens"],
        cached_tokens=counted["prompt_tokens_details"]["cached_tokens"],
        output_tokens=counted["completion_tokens"],
        reasoning_tokens=counted["completion_tokens_details"]["reasoning_tokens"],
    )
    response = {"status_code": 200, "request_id": request.id, "body": body}
    return Outcome(ok=True, response=response, usage=usage, kudos=request.kudos_charged)


def _chat_body(runtime: Runtime, work: LineWork, request: ChatRequest) -> dict:
    """The body its endpoint answers (screened again from the line's body, as the endpoint's call holds it); the
    plain shape when the body no longer screens (a previous response expired meanwhile)."""
    try:
        return _chat_call(runtime, work).answer_body(request)
    except errors.HordeError:
        if work.endpoint == RESPONSES:
            return responses_answer.response_object(request, work.body, responses_answer.Shape())
        return completion.chat_completion(request)


def _text_outcome(runtime: Runtime, work: LineWork) -> Outcome:
    request = text_service.read(runtime, work.request_id)
    assert request is not None, "an ended line's request"
    if request.state != DONE:
        return _unanswered(request, ended_error)
    with runtime.db.read() as session:
        jobs = views.submitted_jobs(session, request.id)
    try:
        ignored = CompletionCall(runtime, dict(work.body)).screened.ignored
    except errors.HordeError:
        ignored = None
    body = text_completion.text_completion(request, jobs, ignored)
    counted = body["usage"]
    usage = Usage(
        input_tokens=counted["prompt_tokens"],
        cached_tokens=counted["prompt_tokens_details"]["cached_tokens"],
        output_tokens=counted["completion_tokens"],
    )
    response = {"status_code": 200, "request_id": request.id, "body": body}
    return Outcome(ok=True, response=response, usage=usage, kudos=request.kudos_charged)


def _unanswered(request: Any, error_of: Callable[[Any], errors.HordeError]) -> Outcome:
    """The line of a request that ended without an answer. Withdrawn by the batch itself: OpenAI's error of the
    ending, no response. Faulted or cancelled otherwise: the error its endpoint would answer (`error_of`), charged
    what it was (a cancelled stream's part, never more)."""
    ending = batch_ending.withdrawn_by(request.fault_rc) if request.state == CANCELLED else None
    if ending is not None:
        return Outcome(ok=False, error={"code": ending.rc, "message": ending.message})
    error = error_of(request)
    body = oai_errors.from_horde_error(error, request.id)
    response = {"status_code": error.status, "request_id": request.id, "body": body}
    return Outcome(ok=False, response=response, kudos=request.kudos_charged)
