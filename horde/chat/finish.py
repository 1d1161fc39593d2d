"""What a submit hands to the waiters of its own process with the request it finished.

A waiter that created its request holds the row as admitted; what a final answer reads of it that changed
since (the state, the reply, the charge, the worker and model that served it, the context adjustments) the
finishing statement returns. With both, the waiter answers without reading the row again: one database
round trip less per request, on the client's path (decision 0018). Every other waiter reads, as before.

With Redis, the finish also travels to the other processes with the event (decision 0021), as JSON of at most
MAX_CARRIED_FINISH_BYTES: a waiter there that created the request answers from it too. A larger reply, or a
message that does not decode, leaves the event bare, and the waiter reads.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass, fields
from typing import Any

from horde.chat.models import DONE, ChatRequest
from horde.chat.request_rows import transient

#: The ORM's own key in an instance's dict: not a column.
_INSTANCE_STATE_KEY = "_sa_instance_state"
#: The columns the claim wrote that a final answer reads: the finishing statement returns them.
CLAIM_COLUMNS = ("worker_id", "worker_name", "served_model", "context_adjustments")
#: A finish larger than this as JSON (a long reply) crosses to other processes as a bare event: they read it.
MAX_CARRIED_FINISH_BYTES = 64 * 1024


@dataclass(frozen=True)
class Finish:
    """The columns a request's finish wrote, and those its claim wrote, as the database returned them."""

    state: str
    reply: dict
    kudos_charged: int
    finished_at: dt.datetime
    worker_id: str | None
    worker_name: str | None
    served_model: str | None
    context_adjustments: list | None

    @classmethod
    def of(cls, reply: dict, kudos: int, at: dt.datetime, claim: Any) -> Finish:
        """A done request's finish: its reply, charge and time as written, and `claim` (a row naming
        CLAIM_COLUMNS) as the finishing statement returned it."""
        claimed = {name: getattr(claim, name) for name in CLAIM_COLUMNS}
        return cls(state=DONE, reply=reply, kudos_charged=kudos, finished_at=at, **claimed)

    def applied_to(self, request: ChatRequest, payload: dict) -> ChatRequest:
        """The request as a read after the finish would give it, from `request` (the row as this process last
        knew it) and `payload` (its prompt, which a waiter's reads leave out until the end)."""
        values: dict[str, Any] = {key: value for key, value in vars(request).items() if key != _INSTANCE_STATE_KEY}
        values.update((name, getattr(self, name)) for name in _FINISH_COLUMNS)
        values["payload"] = payload
        return transient(values)


#: Finish's fields, each named after its column.
_FINISH_COLUMNS = tuple(field.name for field in fields(Finish))


class FinishWire:
    """How a Finish crosses to the other processes with its event (RedisEventBus's handover codec)."""

    @staticmethod
    def encode(handover: object) -> bytes | None:
        """The finish as JSON, or None (a bare event) for anything else or above MAX_CARRIED_FINISH_BYTES."""
        if not isinstance(handover, Finish):
            return None
        values = {name: getattr(handover, name) for name in _FINISH_COLUMNS}
        values["finished_at"] = handover.finished_at.isoformat()
        encoded = json.dumps(values, separators=(",", ":")).encode()
        return encoded if len(encoded) <= MAX_CARRIED_FINISH_BYTES else None

    @staticmethod
    def decode(data: bytes) -> Finish:
        """The Finish `encode` wrote; ValueError (or KeyError, TypeError) for anything else."""
        values = json.loads(data)
        values["finished_at"] = dt.datetime.fromisoformat(values["finished_at"])
        return Finish(**values)


FINISH_WIRE = FinishWire()
