"""One POST /v1/messages call: the chat call with Anthropic's request, answer, stream and errors."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from flask import Response
from werkzeug.datastructures import Headers

from horde import errors
from horde.chat import admission, service
from horde.chat.models import ChatRequest
from horde.chat.tokens import prompt_tokens
from horde.oai import conversation, stream
from horde.oai.chat import ChatCall
from horde.oai.messages import answer
from horde.oai.messages import errors as anthropic_errors
from horde.oai.messages import request as mapping
from horde.oai.messages.events import MessagesWriter
from horde.oai.screening import ScreenedRequest, ScreeningError, screen_chat_request

if TYPE_CHECKING:
    from horde.runtime import Runtime


def screen(
    runtime: Runtime, body: Any, *, counting: bool = False, reasoning_served: Callable[[str], bool] | None = None
) -> tuple[ScreenedRequest, answer.Shape]:
    """The chat contract's ScreenedRequest for an Anthropic body (with every name in this API's), and the
    shape of its answer. `reasoning_served(model)`: whether a hinted effort can be met (else dropped, named)."""
    if isinstance(body, dict):  # bounded before the mapping looks at each message
        admission.check_message_count(body.get("messages"), runtime.settings)
    mapped = mapping.chat_body(body, counting=counting)
    if counting:  # count_tokens has no max_tokens and never streams
        mapped.chat["max_tokens"] = None
    elif mapped.effort_hint and reasoning_served is not None and not _met(reasoning_served, mapped.chat.get("model")):
        del mapped.chat["reasoning_effort"]
        mapped.ignored.add("output_config.effort")
    try:
        screened = screen_chat_request(mapped.chat)
    except ScreeningError as error:
        raise mapping.renamed(error) from None
    mapped.ignored.take(screened.ignored, mapping.rename)
    screened.ignored = mapped.ignored
    return screened, answer.Shape(mapped.thinking, mapped.ignored, mapped.applied_edits)


def count_tokens(runtime: Runtime, body: Any) -> dict:
    """The Horde's own estimate of the prompt, as admission counts it."""
    screened, _ = screen(runtime, body, counting=True)
    native = screened.native
    return {"input_tokens": prompt_tokens(native["messages"], native.get("tools"))}


def _met(served: Callable[[str], bool], model: Any) -> bool:
    """A hinted effort is a requirement only for a model some online worker reasons with (decision 0001 routes
    by it); a model that is no string is the screening's to refuse."""
    return not isinstance(model, str) or served(model)


class MessagesCall(ChatCall):
    def __init__(self, runtime: Runtime, body: dict, screened: ScreenedRequest, shape: answer.Shape):
        super().__init__(runtime, body, screened)
        self.shape = shape

    @classmethod
    def screen_body(cls, runtime: Runtime, body: Any) -> MessagesCall:
        screened, shape = screen(
            runtime, body, reasoning_served=lambda model: service.served_with(runtime, model, "reasoning_effort")
        )
        return cls(runtime, body, screened, shape)

    def conversation_key(self, headers: Headers) -> str | None:
        return conversation.of_messages(self.body, headers)

    def answer_body(self, request: ChatRequest) -> dict:
        return answer.message(request, self.shape)

    def error_response(self, error: errors.HordeError, request_id: str, headers: dict) -> Response:
        result = anthropic_errors.horde_error_response(error, request_id, held=True)
        result.headers.update(headers)
        return result

    def stream_state(self, request: ChatRequest) -> MessagesWriter:
        return MessagesWriter(request, self.shape)

    def stream_opening(self, request: ChatRequest, state: MessagesWriter) -> bytes:
        return super().stream_opening(request, state) + state.opening(request)

    def stream_chunks(self, state: MessagesWriter, events: Iterable[object]) -> Iterator[bytes]:
        return stream.drive(state, events)
