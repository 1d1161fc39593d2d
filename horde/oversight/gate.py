"""The checks every request meets on its way in: an address in timeout (every call of both APIs and /v1), and a
generation request under the Horde's modes (maintenance, raid). Each reads the process's view (view.py): no
database read on the way, but the view's own once VIEW_S.
"""

from __future__ import annotations

import datetime as dt
import time
from typing import Protocol

from horde import errors
from horde.oversight.addresses import parse_address
from horde.oversight.view import Snapshot
from horde.timeutil import utcnow

MAINTENANCE_MESSAGE = "This Horde has entered maintenance mode. Please try again later."
RAID_MESSAGE = (
    "This Horde is in raid mode: an untrusted account younger than {days:g} days cannot queue requests now. "
    "Please try again later."
)
#: The TimeoutIP message counts the seconds left up to this long; past it, it says no more than "in timeout".
SECONDS_SHOWN_UP_TO_S = 4 * 24 * 3600


class Caller(Protocol):
    """What the generation gate reads of the caller (horde/accounts/identity.py Identity)."""

    @property
    def anonymous(self) -> bool: ...

    @property
    def trusted(self) -> bool: ...

    @property
    def created_at(self) -> dt.datetime | None: ...


def refuse_timed_out(snapshot: Snapshot, client_address: str) -> None:
    """403 TimeoutIP when a moderator put `client_address` (or a network holding it) in timeout."""
    if not snapshot.timeouts:
        return
    address = parse_address(client_address)
    if address is None:
        return
    now = time.time()
    expires = snapshot.timeouts.expiry(address, now)
    if expires is None:
        return
    left_s = int(expires - now) + 1
    if left_s > SECONDS_SHOWN_UP_TO_S:
        message = "Due to abuse prevention, your IP address has been put into timeout. Please try again later."
    else:
        message = (
            f"Due to abuse prevention, your IP address has been put into timeout for {left_s} more seconds. "
            "Please try again later."
        )
    raise errors.TimeoutIP(message)


def admit_generation(snapshot: Snapshot, caller: Caller, raid_new_account_s: float) -> None:
    """A new chat or text request (both APIs and /v1): 503 MaintenanceMode in maintenance; in raid mode, 403
    NotTrusted for an untrusted account younger than `raid_new_account_s` (the anonymous user is limited by its
    address's rate and timeouts instead). Requests already waiting or running are not touched."""
    modes = snapshot.modes
    if modes.maintenance_mode:
        raise errors.MaintenanceMode(MAINTENANCE_MESSAGE)
    if modes.raid_mode and is_new_and_untrusted(caller, raid_new_account_s):
        raise errors.NotTrusted(RAID_MESSAGE.format(days=raid_new_account_s / 86400))


def is_new_and_untrusted(caller: Caller, new_account_s: float) -> bool:
    if caller.anonymous or caller.trusted or caller.created_at is None:
        return False
    return (utcnow() - caller.created_at).total_seconds() < new_account_s


def accepts_registrations(snapshot: Snapshot) -> bool:
    """Whether new accounts may register now: raid mode closes registration (horde/registration/ asks here)."""
    return not snapshot.modes.raid_mode
