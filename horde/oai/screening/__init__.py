"""Screening of a POST /v1/chat/completions body: one module per part of the body.

`request` screens the body and its top-level keys and calls, in order, `sampling` (n, token limits,
sampling values, seed, stop, reasoning_effort, user, stream), `messages` (roles, content parts, replayed
tool calls) and `history` (OpenAI's tool-call rule), `tools` (tools, tool_choice, parallel_tool_calls and
the payload size), `formats` (response_format) with `json_schemas` (strict and depth rules of a schema),
and `horde_options` (the horde object). `completions` screens a POST /v1/completions body with the
same parts. `base` holds the error and the checks they share, `fields` the
marshmallow fields they load fixed objects with. Other modules use what this package exports.
"""

from horde.oai.screening.base import ScreeningError
from horde.oai.screening.completions import ScreenedCompletion, screen_completion_request
from horde.oai.screening.request import (
    DEFAULT_NO_OP_PARAMETERS,
    MODELS_MAX_COUNT,
    REQUEST_FIELDS,
    ScreenedRequest,
    screen_chat_request,
)

__all__ = [
    "DEFAULT_NO_OP_PARAMETERS",
    "MODELS_MAX_COUNT",
    "REQUEST_FIELDS",
    "ScreenedCompletion",
    "ScreenedRequest",
    "ScreeningError",
    "screen_chat_request",
    "screen_completion_request",
]
