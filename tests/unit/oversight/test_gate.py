"""The generation gate: maintenance refuses every new request; raid mode refuses new untrusted accounts."""

from __future__ import annotations

import datetime as dt

import pytest

from horde import errors
from horde.accounts.identity import Identity
from horde.oversight.gate import accepts_registrations, admit_generation
from horde.oversight.view import Modes, Snapshot
from horde.timeutil import utcnow

WEEK_S = 7 * 86400


def caller(*, age_s: float, trusted=False, anonymous=False) -> Identity:
    created = utcnow() - dt.timedelta(seconds=age_s)
    return Identity(id=3, username="u", trusted=trusted, anonymous=anonymous, created_at=created)


def test_maintenance_refuses_every_new_request_with_503_and_no_retry():
    snapshot = Snapshot(modes=Modes(maintenance_mode=True))
    with pytest.raises(errors.MaintenanceMode) as refused:
        admit_generation(snapshot, caller(age_s=10 * WEEK_S, trusted=True), WEEK_S)
    assert refused.value.status == 503 and refused.value.should_retry is False
    assert refused.value.headers["Retry-After"] == "60"


def test_raid_mode_refuses_new_untrusted_accounts_only():
    raid = Snapshot(modes=Modes(raid_mode=True))
    with pytest.raises(errors.NotTrusted):
        admit_generation(raid, caller(age_s=3600), WEEK_S)
    admit_generation(raid, caller(age_s=3600, trusted=True), WEEK_S)
    admit_generation(raid, caller(age_s=2 * WEEK_S), WEEK_S)
    admit_generation(raid, caller(age_s=1, anonymous=True), WEEK_S)  # bounded by its address instead
    admit_generation(Snapshot(), caller(age_s=1), WEEK_S)  # no mode: nothing refused


def test_raid_mode_closes_registration():
    assert accepts_registrations(Snapshot())
    assert not accepts_registrations(Snapshot(modes=Modes(raid_mode=True)))
    assert accepts_registrations(Snapshot(modes=Modes(maintenance_mode=True, invite_only_mode=True)))
