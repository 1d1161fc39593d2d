"""A text request's model rows go when it ends: with the state change that ends it (the trigger of
horde/text/models.py), or, where a pop held one at that moment, with the sweeper's next round."""

from __future__ import annotations

from sqlalchemy.orm import Session

from horde.queueing.model_rows import FORGET_PER_SWEEP, ended_rows_deletion
from horde.storage import precompiled
from horde.storage.database import table_of
from horde.text.models import FINAL_STATES, TextRequest, TextRequestModel

_FORGET_ENDED = ended_rows_deletion(table_of(TextRequest), table_of(TextRequestModel), FINAL_STATES)


def forget_ended(session: Session, batch: int = FORGET_PER_SWEEP) -> int:
    """Drop the model rows of up to `batch` rows' worth of ended requests; how many rows went."""
    return precompiled.execute(session.connection(), _FORGET_ENDED, {"batch": batch}).rowcount
