"""OpenAI's tool history rule, on normalized messages.

Tool messages come right after the assistant message with tool_calls and
answer each of its call ids exactly once, in any order. Wording follows
OpenAI's (including its spelling "preceeding"); the param is messages[i].role,
or messages[i].tool_call_id for an id the preceding assistant message did not
issue.
"""

from __future__ import annotations

from horde.oai.screening.base import UNSUPPORTED, ScreeningError

NO_OPEN_CALLS_MESSAGE = (
    "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'."
)


def check_tool_history(messages: list[dict]) -> None:
    open_calls: dict[str, int] = {}  # call id -> issuing message index, in issue order
    answered: set[str] = set()
    for index, message in enumerate(messages):
        if message["role"] == "tool":
            _answer(message["tool_call_id"], index, open_calls, answered)
            continue
        if open_calls:
            raise _unanswered(index, open_calls)
        answered.clear()
        for call in message.get("tool_calls") or ():
            open_calls[call["id"]] = index
    if open_calls:
        raise _unanswered(next(iter(open_calls.values())), open_calls)


def _answer(call_id: str, index: int, open_calls: dict[str, int], answered: set[str]) -> None:
    if call_id in open_calls:
        del open_calls[call_id]
        answered.add(call_id)
        return
    if not open_calls or call_id in answered:
        raise ScreeningError(NO_OPEN_CALLS_MESSAGE, code=UNSUPPORTED, param=f"messages[{index}].role")
    raise ScreeningError(
        f"Invalid parameter: 'tool_call_id' of '{call_id}' not found in 'tool_calls' of previous message.",
        code=UNSUPPORTED,
        param=f"messages[{index}].tool_call_id",
    )


def _unanswered(index: int, open_calls: dict[str, int]) -> ScreeningError:
    return ScreeningError(
        "An assistant message with 'tool_calls' must be followed by tool messages responding to "
        "each 'tool_call_id'. The following tool_call_ids did not have response messages: "
        f"{', '.join(open_calls)}",
        code=UNSUPPORTED,
        param=f"messages[{index}].role",
    )
