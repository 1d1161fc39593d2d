"""The chat contract's limits and modes, in one place.

The native schemas (horde/chat/schemas.py), the worker protocol's (horde/workers/schemas.py) and the OpenAI
front's screening (horde/oai/screening/, which refuses in OpenAI's words what falls outside them) all import
them from here; it sits below every layer that uses it and imports nothing.
"""

from __future__ import annotations

TOKEN_FLOOR = 16
TOKEN_CEILING = 16_384
#: A seed is a signed 64-bit integer (OpenAI's `seed`, a BIGINT column).
SEED_RANGE = (-(2**63), 2**63 - 1)
#: The largest whole number an INTEGER column holds: the bound of a count or an amount with no smaller limit of its
#: own (a worker's reported token counts, which the Horde caps rather than refuses, decision 0028).
INTEGER_MAX = 2**31 - 1
#: A kudos amount a request may name (`max_kudos`) fits a balance's INTEGER column.
MAX_KUDOS = INTEGER_MAX
MAX_MODELS_PER_REQUEST = 5
MODEL_NAME_MAX_CHARS = 200
MAX_STOP_SEQUENCES = 4
SAMPLING_RANGES = {
    "temperature": (0, 2),
    "top_p": (0, 1),
    "frequency_penalty": (-2, 2),
    "presence_penalty": (-2, 2),
}
REASONING_EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh")
MESSAGE_ROLES = ("system", "developer", "user", "assistant", "tool")
FINISH_REASONS = ("stop", "length", "tool_calls")

# The horde options' modes, each with its default first.
CONTEXT_FITTING_MODES = ("truncate_oldest", "grow", "reject")
CONFORMANCE_MODES = ("strict", "best_effort")
AVAILABILITY_MODES = ("fail_fast", "wait")
DEFAULT_CONTEXT_FITTING = CONTEXT_FITTING_MODES[0]
DEFAULT_CONFORMANCE = CONFORMANCE_MODES[0]
DEFAULT_AVAILABILITY_MODE = AVAILABILITY_MODES[0]
