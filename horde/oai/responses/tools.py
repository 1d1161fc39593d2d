"""The Responses API's `tools` and `tool_choice` as the chat contract's function tools.

- A function tool `{type: "function", name, description, parameters, strict}` is a chat function tool; its
  other keys (`defer_loading`, ...) are named as not acted on.
- A namespace `{type: "namespace", name, description, tools: [function tools]}` (Codex's MCP and agent tools)
  is flattened: each function becomes a chat function named `<namespace>__<name>` (Codex's own flat form; cut
  to 64 characters with a hash when longer), the namespace's description before its own. A worker's call of a
  flat name goes back to the client as the function's `name` and `namespace` (`Namespaces.split`), and a
  `function_call` the client sends back with a `namespace` is flattened the same way (`flat_name`).
- A hosted tool the Horde cannot run (web search, file search, code interpreter, image generation, computer
  use, MCP servers, local shell) is dropped and named (`tools[i]`), unless `tool_choice` forces it: then the
  request is refused at `tool_choice`.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from horde.oai.ignored import Ignored
from horde.oai.screening.base import (
    BAD_REQUEST,
    NAME_MAX_CHARS,
    ScreeningError,
    require_list,
    require_object,
    require_string,
)

FUNCTION_KEYS = ("type", "name", "description", "parameters", "strict")
NAMESPACE_KEYS = ("type", "name", "description", "tools")
HOSTED_TOOL_TYPES = (
    "web_search",
    "web_search_2025_08_26",
    "web_search_preview",
    "web_search_preview_2025_03_11",
    "file_search",
    "code_interpreter",
    "image_generation",
    "computer",
    "computer_use",
    "computer_use_preview",
    "mcp",
    "local_shell",
)
TOOL_CHOICE_MODES = ("auto", "none", "required")
NAMESPACE_SEPARATOR = "__"
FLAT_HASH_HEX_CHARS = 8


@dataclass
class Namespaces:
    """The flat names of a request's namespace functions, and the body path of each chat tool."""

    functions: dict[str, tuple[str, str]] = field(default_factory=dict)  # flat name -> (namespace, name)
    paths: list[str] = field(default_factory=list)  # chat tools[k] -> tools[i] or tools[i].tools[j]

    def split(self, flat: str) -> tuple[str | None, str]:
        """(namespace, name) of a chat function name: no namespace for a plain function."""
        return self.functions.get(flat, (None, flat))

    def body_path(self, chat_path: str) -> str:
        """A chat screening param under `tools[k]` written as the body's path of that tool."""
        if not chat_path.startswith("tools["):
            return chat_path
        index, _, rest = chat_path[len("tools[") :].partition("]")
        if not index.isdigit() or int(index) >= len(self.paths):
            return chat_path
        return self.paths[int(index)] + rest.replace(".function.", ".", 1)


def flat_name(namespace: str, name: str) -> str:
    """`<namespace>__<name>`, stable and the same on the way out and back; a hash keeps it to 64 characters."""
    flat = namespace.rstrip("_") + NAMESPACE_SEPARATOR + name.lstrip("_")
    if len(flat) <= NAME_MAX_CHARS:
        return flat
    digest = hashlib.sha256(f"{namespace}\0{name}".encode()).hexdigest()[:FLAT_HASH_HEX_CHARS]
    return flat[: NAME_MAX_CHARS - FLAT_HASH_HEX_CHARS - 1] + "_" + digest


def chat_tools(value: Any, ignored: Ignored) -> tuple[list[dict], Namespaces]:
    """The chat function tools of `tools`, and how to map the namespaced ones back."""
    tools: list[dict] = []
    namespaces = Namespaces()
    for index, entry in enumerate(require_list(value, "tools")):
        path = f"tools[{index}]"
        tool = require_object(entry, path)
        kind = tool.get("type")
        if kind == "function":
            tools.append(_function(tool, path, ignored))
            namespaces.paths.append(path)
        elif kind == "namespace":
            _namespace(tool, path, ignored, tools, namespaces)
        elif kind in HOSTED_TOOL_TYPES:
            ignored.add(path)
        else:
            raise ScreeningError(
                f"Unsupported tool type {kind!r} at '{path}.type': the AI Horde serves function and namespace "
                f"tools, and drops the hosted tools it cannot run ({', '.join(HOSTED_TOOL_TYPES)}).",
                param=f"{path}.type",
            )
    return tools, namespaces


def _function(tool: dict, path: str, ignored: Ignored, *, namespace: str | None = None, about: str = "") -> dict:
    ignored.add_keys(tool, FUNCTION_KEYS, path)
    function = {key: tool[key] for key in ("name", "description", "parameters", "strict") if tool.get(key) is not None}
    if namespace is not None:
        name = require_string(tool.get("name"), f"{path}.name")
        function["name"] = flat_name(namespace, name)
        if about:
            function["description"] = f"{about}\n\n{function['description']}" if "description" in function else about
    return {"type": "function", "function": function}


def _namespace(tool: dict, path: str, ignored: Ignored, tools: list[dict], namespaces: Namespaces) -> None:
    ignored.add_keys(tool, NAMESPACE_KEYS, path)
    namespace = require_string(tool.get("name"), f"{path}.name")
    if not namespace:
        raise ScreeningError(f"Invalid '{path}.name': empty string.", code=BAD_REQUEST, param=f"{path}.name")
    about = tool.get("description")
    about = require_string(about, f"{path}.description") if about is not None else ""
    for number, entry in enumerate(require_list(tool.get("tools"), f"{path}.tools")):
        inner_path = f"{path}.tools[{number}]"
        inner = require_object(entry, inner_path)
        if inner.get("type") != "function":
            raise ScreeningError(
                f"Unsupported tool type {inner.get('type')!r} at '{inner_path}.type': the AI Horde serves function "
                "tools in a namespace.",
                param=f"{inner_path}.type",
            )
        function = _function(inner, inner_path, ignored, namespace=namespace, about=about)
        tools.append(function)
        namespaces.paths.append(inner_path)
        namespaces.functions[function["function"]["name"]] = (namespace, inner["name"])


def chat_tool_choice(value: Any, served: list[dict]) -> Any:
    """The chat tool_choice, None to drop it; refused when it forces a tool the Horde does not serve."""
    if isinstance(value, str):
        if value == "required" and not served:
            raise ScreeningError(
                "Unsupported value for 'tool_choice': 'required' forces a tool call, and the AI Horde serves none "
                "of the tools sent (hosted tools are dropped).",
                param="tool_choice",
            )
        return value if served or value not in TOOL_CHOICE_MODES else None
    choice = require_object(value, "tool_choice")
    kind = choice.get("type")
    if kind in HOSTED_TOOL_TYPES:
        raise ScreeningError(
            f"Unsupported value for 'tool_choice': it forces the hosted tool {kind!r}, which the AI Horde cannot run.",
            param="tool_choice",
        )
    if kind != "function":
        raise ScreeningError(
            f"Unsupported value for 'tool_choice.type': {kind!r}; the AI Horde serves "
            "'auto', 'none', 'required' and a function by name.",
            param="tool_choice.type",
        )
    return {"type": "function", "function": {"name": choice.get("name")}}
