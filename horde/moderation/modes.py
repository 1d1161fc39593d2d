"""The Horde's modes (GET and PUT /api/v2/status/modes, `python -m horde modes`): stored in one row, changed in one
transaction with its audit record, then every process's view is dropped (horde/oversight/view.py), so that a
change holds from the next request everywhere.

- maintenance_mode: no new generation request (503 MaintenanceMode, on both APIs and /v1); requests already
  waiting or running finish, and workers keep popping them.
- invite_only_mode: a user adds a new worker only while it has fewer than it was invited to (`worker_invited`).
- raid_mode: registration is closed (horde/oversight/gate.py accepts_registrations), and an untrusted account
  younger than HORDE_RAID_NEW_ACCOUNT_S queues no generation (403 NotTrusted). Shown to moderators only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sqlalchemy import select, update

from horde import errors
from horde.oversight import trail
from horde.oversight.models import MODES_ROW_ID, HordeModes
from horde.oversight.trail import Actor, Done, Target
from horde.oversight.view import Modes, read_modes
from horde.oversight.view import changed as oversight_changed
from horde.storage.database import insert_ignoring_duplicates, is_postgresql
from horde.timeutil import utcnow

if TYPE_CHECKING:
    from horde.runtime import Runtime

MODE_NAMES = ("maintenance_mode", "invite_only_mode", "raid_mode")
#: What the trail names the Horde's modes by.
MODES_TARGET = "horde"


def shown(modes: Modes, *, moderator: bool) -> dict[str, bool]:
    """HordeModes as the caller may see it: raid mode only to a moderator, as on the AI Horde."""
    shown = modes.as_dict()
    if not moderator:
        shown.pop("raid_mode")
    return shown


def set_modes(runtime: Runtime, actor: Actor, wanted: dict[str, Any], reason: str | None = None) -> dict[str, bool]:
    """Set the modes named in `wanted` (None: as they are); the modes set, with their new values."""
    chosen = {name: bool(wanted[name]) for name in MODE_NAMES if wanted.get(name) is not None}
    if not chosen:
        raise errors.NoHordeModSelected("No mode change selected!")
    with runtime.db.transaction() as session:
        insert_ignoring_duplicates(session, HordeModes, [{"id": MODES_ROW_ID, "changed_at": utcnow()}], "id")
        if is_postgresql(session):  # two admins at once: each records the modes as the other left them
            session.execute(select(HordeModes.id).where(HordeModes.id == MODES_ROW_ID).with_for_update())
        before = read_modes(session).as_dict()
        session.execute(
            update(HordeModes).where(HordeModes.id == MODES_ROW_ID).values(**chosen, changed_at=utcnow()),
            execution_options={"synchronize_session": False},
        )
        trail.record(
            session,
            actor,
            Done.SET_MODES,
            Target.MODES,
            MODES_TARGET,
            before={name: before[name] for name in chosen},
            after=chosen,
            reason=reason,
        )
    oversight_changed(runtime)
    return chosen
