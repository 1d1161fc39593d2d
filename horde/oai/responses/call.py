"""One POST /v1/responses call: the chat call with the Responses API's request, answer and stream."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from flask import Response
from werkzeug.datastructures import Headers

from horde import errors
from horde.accounts.identity import Identity
from horde.chat import admission
from horde.chat.models import ChatRequest
from horde.oai import conversation, sealing, stream
from horde.oai.chat import ChatCall
from horde.oai.responses import answer, background, store
from horde.oai.responses import request as mapping
from horde.oai.responses.events import ResponsesWriter
from horde.oai.responses.input_items import Opener, Resolver
from horde.oai.screening import ScreenedRequest, ScreeningError, screen_chat_request
from horde.oai.screening.base import BAD_REQUEST, json_type_name, require_string

if TYPE_CHECKING:
    from horde.runtime import Runtime


class ResponsesCall(ChatCall):
    def __init__(
        self,
        runtime: Runtime,
        body: dict,
        screened: ScreenedRequest,
        user: Identity,
        conversation: list[dict],
        shape: answer.Shape,
    ):
        """`conversation` is this request's messages without instructions: history, then this turn's input."""
        super().__init__(runtime, body, screened)
        self.user = user
        self.conversation = conversation
        self.shape = shape

    @classmethod
    def screen_for(cls, runtime: Runtime, body: Any, user: Identity) -> ResponsesCall:
        if not isinstance(body, dict):
            raise ScreeningError(
                f"Invalid type for the request body: expected an object, but got {json_type_name(body)} instead.",
                code=BAD_REQUEST,
                param=None,
            )
        history: list[dict] = []
        inherited = None
        if body.get("previous_response_id") is not None:
            previous = require_string(body["previous_response_id"], "previous_response_id")
            stored = background.load_settled(runtime, user.id, previous, "previous_response_id")
            history, inherited = stored.conversation, conversation.of_request(runtime, stored.request_id)
        mapped = mapping.chat_body(body, history, _opener(runtime, user), _resolver(runtime, user))
        try:
            admission.check_message_count(mapped.chat["messages"], runtime.settings)
        except errors.UnsupportedChatParameter as error:
            error.param = "input"  # the conversation: history, instructions and input together
            raise
        try:
            screened = screen_chat_request(mapped.chat)
        except ScreeningError as error:
            raise mapping.renamed(error, mapped.namespaces) from None
        mapped.ignored.take(screened.ignored, lambda param: mapping.rename(param, mapped.namespaces))
        screened.ignored = mapped.ignored
        seal = _sealer(runtime, user) if mapped.sealed_reasoning else None
        shape = answer.Shape(screened.include_reasoning, mapped.ignored, mapped.namespaces, seal)
        call = cls(runtime, body, screened, user, history + mapped.turn, shape)
        call.inherited_conversation = inherited
        return call

    def answer(self, user: Identity, headers: Headers, environ: dict) -> Response:
        """With `background: true` no connection holds the request: horde/oai/responses/background.py."""
        if self.body.get("background") is True:
            return background.answer_call(self, user, headers, environ)
        return super().answer(user, headers, environ)

    def answer_body(self, request: ChatRequest) -> dict:
        """The response object; with `store` (the default) it is kept, with the conversation it ends."""
        body = answer.response_object(request, self.body, self.shape)
        if self.body.get("store") is not False:
            store.save(
                self.runtime, self.user.id, request.id, body, self.conversation + [answer.assistant_message(request)]
            )
        return body

    def stream_state(self, request: ChatRequest) -> ResponsesWriter:
        return ResponsesWriter(request, self.body, self.shape, self.answer_body)

    def stream_opening(self, request: ChatRequest, state: ResponsesWriter) -> bytes:
        return super().stream_opening(request, state) + state.opening(request)

    def stream_chunks(self, state: ResponsesWriter, events: Iterable[object]) -> Iterator[bytes]:
        return stream.drive(state, events)


def _sealer(runtime: Runtime, user: Identity) -> Callable[[str], str]:
    """Seals a reasoning text for this user (encrypted_content)."""
    return lambda text: sealing.seal(sealing.key(runtime), user.id, sealing.REASONING, text)


def _opener(runtime: Runtime, user: Identity) -> Opener:
    """Reads back an encrypted_content this Horde sealed for this user, or refuses the request naming it."""

    def open_sealed(token: str, param: str) -> None:
        try:
            sealing.open_sealed(sealing.key(runtime), user.id, sealing.REASONING, token)
        except sealing.SealBroken:
            raise ScreeningError(
                f"Invalid '{param}': the encrypted reasoning does not open. The AI Horde reads back only the "
                "encrypted_content it sealed for the same API key's user, unaltered.",
                code=BAD_REQUEST,
                param=param,
            ) from None

    return open_sealed


def _resolver(runtime: Runtime, user: Identity) -> Resolver:
    """Finds an output item of the user's stored responses by its id (its response's id shares its hex)."""

    def resolve(item_id: str, param: str) -> dict:
        hex_id = item_id.split("_")[1] if item_id.count("_") >= 1 else ""
        stored = background.load_settled(runtime, user.id, answer.response_id(hex_id), param)
        found = next((item for item in stored.body.get("output", ()) if item.get("id") == item_id), None)
        if found is None:
            raise errors.ResponseNotFound(f"Item with id '{item_id}' not found.", param=param)
        return found

    return resolve
