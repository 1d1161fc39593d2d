"""What a background response keeps so that any server process renders it alike (horde/background's records).

The settings its response echoes (not the input: the record stays small beside the request's own payload), how
its output is written (answer.Shape, as JSON: the named parameters, the namespaces' flat names, whether reasoning
is sealed), and the conversation it continues with this turn's input, which its stored response keeps for a
next turn's previous_response_id.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from horde.oai import sealing
from horde.oai.ignored import Ignored
from horde.oai.responses import answer
from horde.oai.responses.tools import Namespaces

if TYPE_CHECKING:
    from horde.runtime import Runtime

#: The request's fields that its response echoes or its rendering reads (answer.echo, answer.skeleton).
ECHOED_FIELDS = (
    "background",
    "instructions",
    "max_output_tokens",
    "metadata",
    "parallel_tool_calls",
    "previous_response_id",
    "reasoning",
    "store",
    "temperature",
    "text",
    "tool_choice",
    "tools",
    "top_p",
    "truncation",
    "user",
)


@dataclass
class Recipe:
    #: The request's echoed fields (ECHOED_FIELDS), as the answer's functions take a body.
    body: dict
    include_reasoning: bool
    ignored: Ignored
    namespaces: Namespaces
    #: Whether reasoning items carry encrypted_content (include: reasoning.encrypted_content).
    sealed: bool
    #: The chat messages of the conversation up to this request's input, without instructions.
    conversation: list[dict]

    def shape(self, runtime: Runtime, user_id: int) -> answer.Shape:
        seal = None
        if self.sealed:
            key = sealing.key(runtime)
            seal = lambda text: sealing.seal(key, user_id, sealing.REASONING, text)  # noqa: E731
        return answer.Shape(self.include_reasoning, self.ignored, self.namespaces, seal)


def of(body: dict, shape: answer.Shape, conversation: list[dict]) -> Recipe:
    echoed = {key: body[key] for key in ECHOED_FIELDS if key in body}
    ignored = shape.ignored or Ignored()
    return Recipe(echoed, shape.include_reasoning, ignored, shape.namespaces, shape.seal is not None, conversation)


def to_json(recipe: Recipe) -> dict[str, Any]:
    return {
        "body": recipe.body,
        "include_reasoning": recipe.include_reasoning,
        "ignored": {
            "token_param": recipe.ignored.token_param,
            "paths": recipe.ignored.paths,
            "lowered": recipe.ignored.lowered,
        },
        "namespaces": {
            "functions": {flat: list(pair) for flat, pair in recipe.namespaces.functions.items()},
            "paths": recipe.namespaces.paths,
        },
        "sealed": recipe.sealed,
        "conversation": recipe.conversation,
    }


def from_json(data: dict[str, Any]) -> Recipe:
    ignored = Ignored(token_param=data["ignored"]["token_param"])
    for path in data["ignored"]["paths"]:
        ignored.add(path)
    ignored.lowered.extend(data["ignored"]["lowered"])
    functions = {flat: (pair[0], pair[1]) for flat, pair in data["namespaces"]["functions"].items()}
    namespaces = Namespaces(functions, list(data["namespaces"]["paths"]))
    return Recipe(data["body"], data["include_reasoning"], ignored, namespaces, data["sealed"], data["conversation"])
