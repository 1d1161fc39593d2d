"""Anthropic's `context_management` edits, carried out by the Horde before queueing, or refused naming the edit.

- `clear_thinking_20251015`: earlier thinking is never sent to a worker (content.py), so an edit that clears
  old thinking (`keep` a number of turns, default 1) is carried out; the turns it would keep are not sent
  either, as no earlier thinking is. `keep: "all"` asks to keep what the Horde never sends: accepted and named.
- `clear_tool_uses_20250919`: once the prompt reaches the `trigger` (input tokens by the Horde's own estimate,
  default 100,000, or a number of tool uses), the result of every tool use but the `keep` most recent
  (default 3), outside `exclude_tools`, is replaced by a short placeholder, as Anthropic does; with
  `clear_tool_inputs` (true, or a list of tool names) the call's input becomes `{}` too. With `clear_at_least`
  nothing is cleared unless that many tokens are.
- Any other edit type (`compact_20260112`) is refused with 400 at `context_management.edits[i].type`.

What was cleared is reported as Anthropic reports it: `context_management.applied_edits` on the message.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from horde.chat.tokens import prompt_tokens, text_tokens
from horde.oai.ignored import Ignored
from horde.oai.screening.base import BAD_REQUEST, ScreeningError, is_int, require_list, require_object

PARAM = "context_management"
CLEAR_THINKING = "clear_thinking_20251015"
CLEAR_TOOL_USES = "clear_tool_uses_20250919"
EDIT_TYPES = (CLEAR_THINKING, CLEAR_TOOL_USES)
EDIT_KEYS = {
    CLEAR_THINKING: ("type", "keep"),
    CLEAR_TOOL_USES: ("type", "trigger", "keep", "clear_at_least", "exclude_tools", "clear_tool_inputs"),
}
DEFAULT_KEEP_THINKING_TURNS = 1
DEFAULT_TRIGGER = {"type": "input_tokens", "value": 100_000}
DEFAULT_KEEP_TOOL_USES = 3
TRIGGER_TYPES = ("input_tokens", "tool_uses")
#: What a cleared tool result reads; a cleared input becomes an empty object.
CLEARED_RESULT = "[This tool result was cleared to save context.]"
CLEARED_INPUT = "{}"
THINKING_BLOCKS = ("thinking", "redacted_thinking")


@dataclass
class Edit:
    kind: str
    path: str
    keep: int | None  # thinking turns or tool uses kept; None keeps every thinking turn
    trigger: dict | None = None
    clear_at_least: int | None = None
    exclude_tools: tuple[str, ...] = ()
    clear_inputs: bool | tuple[str, ...] = False


def screen(value: Any) -> list[Edit]:
    """The edits of a `context_management` object, each checked; one of each type at most."""
    config = require_object(value, PARAM)
    for key in config:
        if key != "edits":
            raise _refused(f"{PARAM}.{key}", "Extra inputs are not permitted")
    edits: list[Edit] = []
    for index, entry in enumerate(require_list(config.get("edits", []), f"{PARAM}.edits")):
        path = f"{PARAM}.edits[{index}]"
        edit = require_object(entry, path)
        kind = edit.get("type")
        if kind not in EDIT_TYPES:
            raise ScreeningError(
                f"{path}.type: the AI Horde cannot carry out context edits of type {kind!r}; it carries out "
                f"{' and '.join(EDIT_TYPES)}.",
                param=f"{path}.type",
            )
        earlier = next((done.path for done in edits if done.kind == kind), None)
        if earlier is not None:
            raise _refused(f"{path}.type", f"{kind} is already {earlier}; send each edit type once")
        for key in edit:
            if key not in EDIT_KEYS[kind]:
                raise _refused(f"{path}.{key}", "Extra inputs are not permitted")
        edits.append(_thinking_edit(edit, path) if kind == CLEAR_THINKING else _tool_uses_edit(edit, path))
    return edits


def apply(edits: list[Edit], body: dict, messages: list[dict], tools: list | None, ignored: Ignored) -> list[dict]:
    """Carry out `edits` on the chat `messages` (in place); the applied edits, as Anthropic lists them.

    `body` is the Anthropic request the messages come from, already mapped (so its blocks are valid).
    """
    applied = []
    for edit in edits:
        if edit.kind == CLEAR_THINKING:
            if edit.keep is None:
                ignored.add(edit.path)
                continue
            outcome = _clear_thinking(edit.keep, body.get("messages") or [])
        else:
            outcome = _clear_tool_uses(edit, messages, tools)
        if outcome is not None:
            applied.append(outcome)
    return applied


def _thinking_edit(edit: dict, path: str) -> Edit:
    keep = edit.get("keep", {"type": "thinking_turns", "value": DEFAULT_KEEP_THINKING_TURNS})
    if keep == "all" or (isinstance(keep, dict) and keep == {"type": "all"}):
        return Edit(CLEAR_THINKING, path, None)
    return Edit(CLEAR_THINKING, path, _counted(keep, f"{path}.keep", "thinking_turns", minimum=0))


def _tool_uses_edit(edit: dict, path: str) -> Edit:
    trigger = require_object(edit.get("trigger", DEFAULT_TRIGGER), f"{path}.trigger")
    kind = trigger.get("type")
    if kind not in TRIGGER_TYPES:
        raise _refused(f"{path}.trigger.type", "Input should be 'input_tokens' or 'tool_uses'", BAD_REQUEST)
    value = _counted(trigger, f"{path}.trigger", kind, minimum=1)
    keep = edit.get("keep", {"type": "tool_uses", "value": DEFAULT_KEEP_TOOL_USES})
    clear_at_least = edit.get("clear_at_least")
    inputs = edit.get("clear_tool_inputs", False)
    return Edit(
        CLEAR_TOOL_USES,
        path,
        _counted(keep, f"{path}.keep", "tool_uses", minimum=0),
        trigger={"type": kind, "value": value},
        clear_at_least=None
        if clear_at_least is None
        else _counted(clear_at_least, f"{path}.clear_at_least", "input_tokens", minimum=0),
        exclude_tools=_names(edit.get("exclude_tools"), f"{path}.exclude_tools"),
        clear_inputs=inputs if isinstance(inputs, bool) else _names(inputs, f"{path}.clear_tool_inputs"),
    )


def _counted(value: Any, path: str, kind: str, *, minimum: int) -> int:
    """The value of a `{"type": kind, "value": N}` object."""
    counted = require_object(value, path)
    if counted.get("type") != kind:
        raise _refused(f"{path}.type", f"Input should be '{kind}'", BAD_REQUEST)
    for key in counted:
        if key not in ("type", "value"):
            raise _refused(f"{path}.{key}", "Extra inputs are not permitted")
    number = counted.get("value")
    if not isinstance(number, int) or not is_int(number) or number < minimum:
        raise _refused(f"{path}.value", f"Input should be an integer of at least {minimum}", BAD_REQUEST)
    return number


def _names(value: Any, path: str) -> tuple[str, ...]:
    if value is None:
        return ()
    names = require_list(value, path)
    if not all(isinstance(name, str) for name in names):
        raise _refused(path, "Input should be a list of tool names", BAD_REQUEST)
    return tuple(names)


def _refused(param: str, why: str, code: str | None = None) -> ScreeningError:
    if code is None:
        return ScreeningError(f"{param}: {why}", param=param)
    return ScreeningError(f"{param}: {why}", code=code, param=param)


def _clear_thinking(keep: int, messages: list) -> dict | None:
    """The turns older than the `keep` most recent with thinking: cleared (the Horde sends no earlier thinking)."""
    turns = [tokens for tokens in map(_thinking_tokens, messages) if tokens is not None]
    cleared = turns[: max(0, len(turns) - keep)]
    if not cleared:
        return None
    return {"type": CLEAR_THINKING, "cleared_thinking_turns": len(cleared), "cleared_input_tokens": sum(cleared)}


def _thinking_tokens(message: Any) -> int | None:
    """The tokens of an assistant message's thinking blocks; None when it has none."""
    content = message.get("content") if message.get("role") == "assistant" else None
    if not isinstance(content, list):
        return None
    blocks = [block for block in content if block.get("type") in THINKING_BLOCKS]
    if not blocks:
        return None
    return sum(text_tokens(block.get("thinking") or block.get("data")) for block in blocks)


def _clear_tool_uses(edit: Edit, messages: list[dict], tools: list | None) -> dict | None:
    calls = [call for message in messages if message["role"] == "assistant" for call in message.get("tool_calls", ())]
    trigger: dict[str, Any] = edit.trigger or DEFAULT_TRIGGER
    reached = len(calls) if trigger["type"] == "tool_uses" else prompt_tokens(messages, tools)
    if reached < trigger["value"]:
        return None
    keep = edit.keep or 0
    older = calls[: max(0, len(calls) - keep)]
    cleared = [call for call in older if call["function"]["name"] not in edit.exclude_tools]
    results = {message["tool_call_id"]: message for message in messages if message["role"] == "tool"}
    saved = 0
    changes: list[tuple[dict, str, str]] = []
    for call in cleared:
        result = results.get(call["id"])
        if result is not None and result["content"] != CLEARED_RESULT:
            saved += max(0, text_tokens(_text(result["content"])) - text_tokens(CLEARED_RESULT))
            changes.append((result, "content", CLEARED_RESULT))
        clear_input = edit.clear_inputs is True or (
            isinstance(edit.clear_inputs, tuple) and call["function"]["name"] in edit.clear_inputs
        )
        if clear_input and call["function"]["arguments"] != CLEARED_INPUT:
            saved += max(0, text_tokens(call["function"]["arguments"]) - text_tokens(CLEARED_INPUT))
            changes.append((call["function"], "arguments", CLEARED_INPUT))
    if not cleared or (edit.clear_at_least is not None and saved < edit.clear_at_least):
        return None
    for target, key, value in changes:
        target[key] = value
    return {"type": CLEAR_TOOL_USES, "cleared_tool_uses": len(cleared), "cleared_input_tokens": saved}


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content or () if isinstance(part, dict))
