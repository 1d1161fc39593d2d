"""The worker protocol's shared words: what a worker may declare on a pop, and the bounds of a declaration.

The server (the pop's schema, the declarations' bit masks) and the reference worker (horde/bridge/, which speaks
only HTTP) read them from here, so both sides have one definition. It imports nothing but the standard
library: the bridge's import contract (pyproject.toml) allows it and nothing else of the server. The names are
the native contract's (docs/reference/chat_requests.md).
"""

from __future__ import annotations

#: What a worker's backend acts on. The order is the bit order of the masks the server stores
#: (horde/workers/declarations.py): a new name goes at the end.
FEATURES = (
    "tools",
    "json_object",
    "json_schema",
    "tools_with_response_format",
    "vision",
    "seed",
    "frequency_penalty",
    "presence_penalty",
    "reasoning_effort",
    "progress",
)
#: What a worker enforces, not only attempts; stored as masks in the same way.
GUARANTEES = ("tool_choice", "schema_adherence", "prompt_fit")

#: A pop's declaration: a worker's name, the models it serves, its longest reply and context, its threads, and
#: how long a pop may wait for a job.
NAME_MAX_CHARS = 100
MODELS_MAX = 100
MAX_LENGTH_MIN_TOKENS = 16
MAX_LENGTH_MAX_TOKENS = 16_384
MAX_CONTEXT_LENGTH_MIN_TOKENS = 2 * MAX_LENGTH_MIN_TOKENS
#: The largest context a worker may declare (the text pop's limit too).
MAX_CONTEXT_LENGTH_MAX_TOKENS = 1_048_576
THREADS_MIN = 1
THREADS_MAX = 50
POP_WAIT_MAX_S = 30
