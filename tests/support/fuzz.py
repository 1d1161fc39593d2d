"""Random JSON for the body fuzz tests: screening (unit) and both APIs over HTTP (integration).

The scalars include strings no database column can hold as text (NUL) and strings
that are not Unicode at all (lone surrogates), which JSON can still carry as escapes.
"""

from __future__ import annotations

UNSTORABLE_STRINGS = ["\x00", "a\x00b", "\ud800", "x\udfffy", "\ud83d"]
SCALARS = [
    None,
    True,
    False,
    0,
    1,
    -1,
    16,
    2.5,
    -0.0,
    float("nan"),
    "",
    "x",
    "json",
    "user",
    "tool",
    "function",
    "call_1",
    "a:b",
    "data:image/png;base64,AA",
    "https://x/y.png",
    "none",
    "auto",
    "text",
    "json_object",
    "json_schema",
    "object",
    2**70,
    *UNSTORABLE_STRINGS,
]
KEYS = [
    "model",
    "models",
    "messages",
    "role",
    "content",
    "type",
    "text",
    "name",
    "tool_calls",
    "tool_call_id",
    "id",
    "function",
    "arguments",
    "tools",
    "tool_choice",
    "parameters",
    "strict",
    "response_format",
    "json_schema",
    "schema",
    "properties",
    "items",
    "anyOf",
    "required",
    "additionalProperties",
    "horde",
    "only",
    "max_kudos",
    "stream",
    "stream_options",
    "include_usage",
    "stop",
    "n",
    "max_tokens",
    "image_url",
    "url",
    "detail",
    "logprobs",
    "service_tier",
    "temperature",
    "$defs",
    "x",
    "a\x00",
    "\ud800",
]


def random_json(rng, depth=0):
    roll = rng.random()
    if depth > 5 or roll < 0.4:
        return rng.choice(SCALARS)
    if roll < 0.65:
        return [random_json(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    return {rng.choice(KEYS): random_json(rng, depth + 1) for _ in range(rng.randint(0, 5))}


def mutate(rng, value):
    """Replace one random node of ``value`` with random JSON."""
    if not isinstance(value, (dict, list)) or not value or rng.random() < 0.2:
        return random_json(rng)
    if isinstance(value, dict):
        key = rng.choice(list(value))
        value[key] = mutate(rng, value[key])
    else:
        index = rng.randrange(len(value))
        value[index] = mutate(rng, value[index])
    return value
