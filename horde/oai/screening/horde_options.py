"""Screening of the horde extension object: the Horde options OpenAI has no key for.

Unknown keys (dry_run and operation_key included) are refused at horde.<key>
with UnsupportedChatParameter; a wrong type or value is BadRequest at
horde.<key>. A key sent as null takes its default.
"""

from __future__ import annotations

from typing import Any

from horde.http import contract
from horde.oai.screening.base import require_object
from horde.oai.screening.fields import (
    Choice,
    FixedSchema,
    NonEmptyStringList,
    PositiveInt,
    StrictBool,
    load_fixed_object,
)

HORDE_OPTION_DEFAULTS = {
    "trusted_workers": False,
    "context_fitting": contract.DEFAULT_CONTEXT_FITTING,
    "include_reasoning": True,
    "conformance": contract.DEFAULT_CONFORMANCE,
    "openai_guards": False,
    "availability_mode": contract.DEFAULT_AVAILABILITY_MODE,
}
# Options that screening consumes; every other option goes into the native request.
SCREENING_ONLY_OPTIONS = ("include_reasoning", "openai_guards")


class HordeOptionsSchema(FixedSchema):
    """The horde object: every key optional, unknown keys refused."""

    only = NonEmptyStringList()  # type: ignore[assignment]  # a field, not Schema.only
    trusted_workers = StrictBool()
    context_fitting = Choice(contract.CONTEXT_FITTING_MODES)
    max_kudos = PositiveInt()
    include_reasoning = StrictBool()
    conformance = Choice(contract.CONFORMANCE_MODES)
    openai_guards = StrictBool()
    availability_mode = Choice(contract.AVAILABILITY_MODES)


_HORDE_OPTIONS = HordeOptionsSchema()  # reused: loading keeps no state on the schema


def screen_horde_options(body: dict) -> dict:
    """Every horde option, with the defaults filled in for those not sent."""
    if "horde" not in body:
        return dict(HORDE_OPTION_DEFAULTS)
    options: Any = require_object(body["horde"], "horde")
    return {**HORDE_OPTION_DEFAULTS, **load_fixed_object(_HORDE_OPTIONS, options, "horde")}
