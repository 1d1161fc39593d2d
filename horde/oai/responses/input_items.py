"""The Responses API's `input` as chat messages.

A string is one user message. Items: messages (`input_text`, `input_image`,
and `output_text` on assistant history), `function_call` items (consecutive
ones become one assistant message with tool_calls; one with a `namespace` calls
that namespace's flattened function, horde/oai/responses/tools.py) and
`function_call_output` items (tool messages). A `reasoning` item, the model's
earlier reasoning sent back by clients such as the Agents SDK and Codex, is not
sent to the model, as chat history's reasoning_content is not; its
`encrypted_content`, when it has one, must open (the `open_sealed` callback), or
the request is refused naming it. An `item_reference` (the AI SDK refers to a
stored response's reasoning item by its id) stands for the item it names, of
the caller's stored responses (the `resolve` callback). Any other item or part
type is refused.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from horde.oai.responses.tools import flat_name
from horde.oai.screening.base import ScreeningError, require_list, require_object, require_string

#: Reads back an item's encrypted_content (the token, its param path), raising ScreeningError when it does not open.
Opener = Callable[[str, str], None]
#: The output item a stored response holds under an id (the id, its param path), or a 404 naming the param.
Resolver = Callable[[str, str], dict]

ITEM_TYPES = ("message", "function_call", "function_call_output", "reasoning", "item_reference")
MESSAGE_ROLES = ("user", "system", "developer", "assistant")
TEXT_PART_TYPES = ("input_text", "output_text")


def input_messages(value: Any, open_sealed: Opener | None = None, resolve: Resolver | None = None) -> list[dict]:
    if isinstance(value, str):
        return [{"role": "user", "content": value}]
    messages: list[dict] = []
    for index, entry in enumerate(require_list(value, "input")):
        path = f"input[{index}]"
        item = require_object(entry, path)
        kind = item.get("type", "message" if "role" in item else None)
        if kind not in ITEM_TYPES:
            raise ScreeningError(
                f"Unsupported input item type {kind!r} at '{path}.type': the AI Horde serves "
                f"{', '.join(ITEM_TYPES)} items.",
                param=f"{path}.type",
            )
        if kind == "item_reference":
            item, kind = _referenced(item, path, resolve)
        if kind == "message":
            messages.append(_message(item, path))
        elif kind == "function_call":
            _add_call(messages, item, path)
        elif kind == "reasoning":
            _reasoning(item, path, open_sealed)
        elif kind == "function_call_output":
            messages.append(
                {
                    "role": "tool",
                    "tool_call_id": require_string(item.get("call_id"), f"{path}.call_id"),
                    "content": _output_text(item.get("output"), f"{path}.output"),
                }
            )
    return messages


def _message(item: dict, path: str) -> dict:
    role = item.get("role")
    if role not in MESSAGE_ROLES:
        raise ScreeningError(
            f"Invalid value for '{path}.role': {role!r}; expected one of {', '.join(MESSAGE_ROLES)}.",
            param=f"{path}.role",
        )
    content = item.get("content")
    if isinstance(content, str):
        return {"role": role, "content": content}
    parts = [
        _part(part, f"{path}.content[{index}]") for index, part in enumerate(require_list(content, f"{path}.content"))
    ]
    if role == "assistant":  # the chat contract's assistant history is text only
        return {"role": role, "content": "".join(part.get("text", "") for part in parts)}
    return {"role": role, "content": parts}


def _part(value: Any, path: str) -> dict:
    part = require_object(value, path)
    kind = part.get("type")
    if kind in TEXT_PART_TYPES:
        return {"type": "text", "text": require_string(part.get("text"), f"{path}.text")}
    if kind == "input_image":
        if part.get("file_id") is not None or part.get("image_url") is None:
            raise ScreeningError(
                f"Unsupported value at '{path}': the AI Horde takes images by 'image_url' (an "
                "http(s) URL or a data URL), not by 'file_id'.",
                param=f"{path}.image_url",
            )
        image = {"url": part["image_url"]}
        if part.get("detail") is not None:
            image["detail"] = part["detail"]
        return {"type": "image_url", "image_url": image}
    raise ScreeningError(
        f"Unsupported content part type {kind!r} at '{path}.type': the AI Horde serves "
        "input_text, input_image and output_text.",
        param=f"{path}.type",
    )


def _referenced(item: dict, path: str, resolve: Resolver | None) -> tuple[dict, str]:
    """The stored output item an item_reference names, and its type."""
    item_id = require_string(item.get("id"), f"{path}.id")
    if resolve is None:
        raise ScreeningError(f"Invalid '{path}': this call cannot read stored items.", param=f"{path}.id")
    found = resolve(item_id, f"{path}.id")
    return found, found.get("type", "message")


def _reasoning(item: dict, path: str, open_sealed: Opener | None) -> None:
    token = item.get("encrypted_content")
    if token is None:
        return
    token = require_string(token, f"{path}.encrypted_content")
    if open_sealed is None:
        raise ScreeningError(
            f"Invalid '{path}.encrypted_content': this call cannot read encrypted reasoning back.",
            param=f"{path}.encrypted_content",
        )
    open_sealed(token, f"{path}.encrypted_content")


def _add_call(messages: list[dict], item: dict, path: str) -> None:
    name = require_string(item.get("name"), f"{path}.name")
    if item.get("namespace") is not None:
        name = flat_name(require_string(item["namespace"], f"{path}.namespace"), name)
    call = {
        "id": require_string(item.get("call_id"), f"{path}.call_id"),
        "type": "function",
        "function": {
            "name": name,
            "arguments": require_string(item.get("arguments"), f"{path}.arguments"),
        },
    }
    last = messages[-1] if messages else None
    if last is not None and last["role"] == "assistant":
        last.setdefault("tool_calls", []).append(call)
    else:
        messages.append({"role": "assistant", "content": None, "tool_calls": [call]})


def _output_text(value: Any, path: str) -> str:
    if isinstance(value, str):
        return value
    parts = require_list(value, path)
    texts = []
    for index, part in enumerate(parts):
        entry = require_object(part, f"{path}[{index}]")
        if entry.get("type") not in TEXT_PART_TYPES:
            raise ScreeningError(
                f"Unsupported part type {entry.get('type')!r} at '{path}[{index}].type': a function's output is text.",
                param=f"{path}[{index}].type",
            )
        texts.append(require_string(entry.get("text"), f"{path}[{index}].text"))
    return "".join(texts)
