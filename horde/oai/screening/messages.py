"""Screening of messages: roles, served keys per role, content parts and tool calls.

Keys outside a role's served set are dropped, as OpenAI ignores them; this
covers every field the OpenAI SDK adds when it replays a message (refusal,
audio, annotations, function_call, parsed, reasoning_content,
tool_calls[].index, function.parsed_arguments). Those replayed keys echo the
model's own output and are dropped without a name; any other dropped key (a
`cache_control` on a part, say) is named (name_dropped_keys). tool_calls on a
message other than an assistant message is refused. A developer message
becomes a system message, and a name on a tool message is dropped. Param paths
are written messages[2].role, not OpenAI's messages.[2].role.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from horde.cooperative import pause_every
from horde.http.contract import MESSAGE_ROLES
from horde.oai.ignored import Ignored
from horde.oai.screening.base import (
    BAD_REQUEST,
    UNSUPPORTED,
    ScreeningError,
    bad_type,
    empty_array,
    invalid_choice,
    missing,
    require_list,
    require_object,
    require_string,
)
from horde.oai.screening.history import check_tool_history

IMAGE_DETAILS = ("auto", "low", "high")
TOOL_CALL_TYPES = ("function",)
IMAGE_URL_SCHEMES = ("http", "https")
_DATA_IMAGE_URL_RE = re.compile(r"data:image/[A-Za-z0-9.+-]+;base64,\S+", re.IGNORECASE)
_CONTENT_TYPE = "a string or an array of content parts"
#: The keys each role serves.
SERVED_KEYS = {
    "system": ("role", "content", "name"),
    "developer": ("role", "content", "name"),
    "user": ("role", "content", "name"),
    "assistant": ("role", "content", "name", "tool_calls"),
    "tool": ("role", "content", "tool_call_id"),
}
#: Keys a client replays from the model's own output (the OpenAI SDK, reasoning relays): dropped, not named.
REPLAYED_MESSAGE_KEYS = (
    "refusal",
    "audio",
    "annotations",
    "function_call",
    "parsed",
    "reasoning_content",
    "reasoning",
    "reasoning_details",
    "name",
)
PART_KEYS = {"text": ("type", "text"), "image_url": ("type", "image_url")}
IMAGE_URL_KEYS = ("url", "detail")
TOOL_CALL_KEYS = ("id", "type", "function", "index")
TOOL_CALL_FUNCTION_KEYS = ("name", "arguments", "parsed_arguments")


def screen_messages(value: Any, ignored: Ignored) -> list[dict]:
    """The normalized messages, after the tool history rule; the keys dropped are named in `ignored`."""
    if value is None:
        raise missing("messages")
    messages = require_list(value, "messages")
    if not messages:
        raise empty_array("messages")
    screened = [screen_message(message, f"messages[{index}]") for index, message in enumerate(pause_every(messages))]
    check_tool_history(screened)
    name_dropped_keys(messages, ignored)
    return screened


def name_dropped_keys(messages: list[dict], ignored: Ignored) -> None:
    """Name the keys the screening dropped from these (screened) messages, except those replayed."""
    for index, message in enumerate(messages):
        path = f"messages[{index}]"
        role = message["role"]
        ignored.add_keys(message, SERVED_KEYS[role] + REPLAYED_MESSAGE_KEYS, path)
        content = message.get("content")
        for number, part in enumerate(content if isinstance(content, list) else ()):
            part_path = f"{path}.content[{number}]"
            ignored.add_keys(part, PART_KEYS[part["type"]], part_path)
            if part["type"] == "image_url":
                ignored.add_keys(part["image_url"], IMAGE_URL_KEYS, f"{part_path}.image_url")
        for number, call in enumerate(message.get("tool_calls") or () if role == "assistant" else ()):
            call_path = f"{path}.tool_calls[{number}]"
            ignored.add_keys(call, TOOL_CALL_KEYS, call_path)
            ignored.add_keys(call["function"], TOOL_CALL_FUNCTION_KEYS, f"{call_path}.function")


def screen_message(value: Any, path: str) -> dict:
    message = require_object(value, path)
    role = _screen_role(message, path)
    if "tool_calls" in message and role != "assistant":
        raise ScreeningError(
            f"Invalid parameter: 'tool_calls' is only allowed on messages with role 'assistant', "
            f"but {path} has role '{role}'.",
            code=UNSUPPORTED,
            param=f"{path}.tool_calls",
        )
    return _SCREENERS[role](message, path)


def _screen_role(message: dict, path: str) -> str:
    if "role" not in message:
        raise missing(f"{path}.role")
    role = require_string(message["role"], f"{path}.role")
    if role not in MESSAGE_ROLES:
        raise invalid_choice(f"{path}.role", role, MESSAGE_ROLES, code=UNSUPPORTED)
    return role


def _screen_instruction(message: dict, path: str) -> dict:
    screened = {"role": "system", "content": _screen_content(message, path, images=False)}
    return _with_name(screened, message, path)


def _screen_user(message: dict, path: str) -> dict:
    screened = {"role": "user", "content": _screen_content(message, path, images=True)}
    return _with_name(screened, message, path)


def _screen_assistant(message: dict, path: str) -> dict:
    tool_calls = _screen_tool_calls(message.get("tool_calls"), f"{path}.tool_calls")
    content = _screen_content(message, path, images=False, optional=bool(tool_calls))
    screened = _with_name({"role": "assistant", "content": content}, message, path)
    if tool_calls:
        screened["tool_calls"] = tool_calls
    return screened


def _screen_tool(message: dict, path: str) -> dict:
    content = _screen_content(message, path, images=False)
    if message.get("tool_call_id") is None:
        raise ScreeningError(
            "Missing parameter 'tool_call_id': messages with role 'tool' must have a 'tool_call_id'.",
            code=BAD_REQUEST,
            param=f"{path}.tool_call_id",
        )
    call_id = require_string(message["tool_call_id"], f"{path}.tool_call_id")
    return {"role": "tool", "content": content, "tool_call_id": call_id}


_SCREENERS: dict[str, Callable[[dict, str], dict]] = {
    "system": _screen_instruction,
    "developer": _screen_instruction,
    "user": _screen_user,
    "assistant": _screen_assistant,
    "tool": _screen_tool,
}


def _with_name(screened: dict, message: dict, path: str) -> dict:
    name = message.get("name")
    if name is not None and require_string(name, f"{path}.name"):
        screened["name"] = name
    return screened


def _screen_content(message: dict, path: str, *, images: bool, optional: bool = False) -> Any:
    content = message.get("content")
    if content is None:
        if optional:
            return None
        if "content" not in message:
            raise missing(f"{path}.content")
        raise bad_type(f"{path}.content", _CONTENT_TYPE, content)
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise bad_type(f"{path}.content", _CONTENT_TYPE, content)
    if not content:
        raise empty_array(f"{path}.content")
    return [_screen_part(part, f"{path}.content[{index}]", images) for index, part in enumerate(content)]


def _screen_part(value: Any, path: str, images: bool) -> dict:
    part = require_object(value, path)
    if "type" not in part:
        raise missing(f"{path}.type")
    kind = require_string(part["type"], f"{path}.type")
    if kind == "text":
        if "text" not in part:
            raise missing(f"{path}.text")
        return {"type": "text", "text": require_string(part["text"], f"{path}.text")}
    if kind == "image_url" and images:
        return {"type": "image_url", "image_url": _screen_image(part, f"{path}.image_url")}
    raise _refused_part(path, kind)


def _refused_part(path: str, kind: str) -> ScreeningError:
    if kind == "image_url":
        reason = "which the AI Horde serves only in user messages"
    else:
        reason = "where the AI Horde serves 'text' parts, and 'image_url' parts in user messages"
    return ScreeningError(
        f"Unsupported content part: '{path}' has type '{kind}', {reason}.",
        code=UNSUPPORTED,
        param=f"{path}.type={kind}",
    )


def _screen_image(part: dict, path: str) -> dict:
    if "image_url" not in part:
        raise missing(path)
    image = require_object(part["image_url"], path)
    if "url" not in image:
        raise missing(f"{path}.url")
    url = require_string(image["url"], f"{path}.url")
    if not is_image_url(url):
        raise ScreeningError(
            f"Invalid '{path}.url': expected a data:image/...;base64, URL or an http(s) URL.",
            code=BAD_REQUEST,
            param=f"{path}.url",
        )
    screened = {"url": url}
    detail = image.get("detail")
    if detail is not None:
        detail = require_string(detail, f"{path}.detail")
        if detail not in IMAGE_DETAILS:
            raise invalid_choice(f"{path}.detail", detail, IMAGE_DETAILS)
        screened["detail"] = detail
    return screened


def is_image_url(url: str) -> bool:
    """A data:image/<type>;base64, URL with a payload, or an http(s) URL with a host."""
    if _DATA_IMAGE_URL_RE.fullmatch(url):
        return True
    try:
        parts = urlsplit(url)
        return parts.scheme.lower() in IMAGE_URL_SCHEMES and bool(parts.hostname)
    except ValueError:
        return False


def _screen_tool_calls(value: Any, path: str) -> list[dict]:
    """Tool calls replayed in an assistant message; null or [] count as none."""
    if value is None:
        return []
    calls = [_screen_tool_call(call, f"{path}[{index}]") for index, call in enumerate(require_list(value, path))]
    seen: set[str] = set()
    for index, call in enumerate(calls):
        if call["id"] in seen:
            raise ScreeningError(
                f"Invalid '{path}[{index}].id': the tool call id '{call['id']}' appears twice in this message.",
                code=BAD_REQUEST,
                param=f"{path}[{index}].id",
            )
        seen.add(call["id"])
    return calls


def _screen_tool_call(value: Any, path: str) -> dict:
    call = require_object(value, path)
    call_id = _required_string(call, "id", path)
    kind = call.get("type")
    if kind is not None and require_string(kind, f"{path}.type") not in TOOL_CALL_TYPES:
        raise invalid_choice(f"{path}.type", kind, TOOL_CALL_TYPES, code=UNSUPPORTED)
    if "function" not in call:
        raise missing(f"{path}.function")
    function = require_object(call["function"], f"{path}.function")
    name = _required_string(function, "name", f"{path}.function")
    arguments = _required_string(function, "arguments", f"{path}.function")
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def _required_string(container: dict, key: str, path: str) -> str:
    if key not in container:
        raise missing(f"{path}.{key}")
    return require_string(container[key], f"{path}.{key}")


def mentions_word(messages: list[dict], word: str) -> bool:
    """Whether any message's text content contains ``word``, ignoring case."""
    word = word.lower()
    for message in messages:
        content = message.get("content")
        texts = (
            [content]
            if isinstance(content, str)
            else [part["text"] for part in content or () if part.get("type") == "text"]
        )
        if any(word in text.lower() for text in texts):
            return True
    return False
