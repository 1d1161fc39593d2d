"""Each process's view of the modes and the timeouts: read once, dropped by the bus's `oversight` event (another
process's change), read again once VIEW_S old."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import insert

from horde.oversight.models import MODES_ROW_ID, AddressTimeout, HordeModes
from horde.oversight.view import OVERSIGHT_CHANNEL, OversightView
from horde.timeutil import utcnow


def test_a_change_written_elsewhere_holds_here_once_the_bus_says_so(client, runtime):
    assert client.get("/api/v2/status/modes").json["maintenance_mode"] is False  # the view is read now
    with runtime.db.transaction() as session:  # as another process's change, committed before its event
        session.execute(insert(HordeModes).values(id=MODES_ROW_ID, maintenance_mode=True, changed_at=utcnow()))
        session.execute(
            insert(AddressTimeout).values(
                network="203.0.113.0/24", expires_at=utcnow() + dt.timedelta(hours=1), created_at=utcnow()
            )
        )
    assert client.get("/api/v2/status/modes").json["maintenance_mode"] is False  # not heard yet: the view in hand
    runtime.bus.publish_now(OVERSIGHT_CHANNEL)  # as the other process's event arrives
    assert client.get("/api/v2/status/modes").json["maintenance_mode"] is True
    refused = client.get("/api/v2/status/heartbeat", environ_base={"REMOTE_ADDR": "203.0.113.40"})
    assert refused.json["rc"] == "TimeoutIP"


def test_the_view_is_read_again_once_it_is_due(runtime):
    view = OversightView(runtime.db, view_s=0.0)  # always due: every look reads
    assert view.current().modes.raid_mode is False
    with runtime.db.transaction() as session:
        session.execute(insert(HordeModes).values(id=MODES_ROW_ID, raid_mode=True, changed_at=utcnow()))
    assert view.current().modes.raid_mode is True
    kept = OversightView(runtime.db)  # VIEW_S: the first read holds
    first = kept.current()
    assert kept.current() is first
    kept.forget()
    assert kept.current() is not first
    deaf = OversightView(runtime.db, polling_s=lambda: 0.0)  # a process that cannot hear the others reads again
    assert deaf.current() is not deaf.current()


def test_an_expired_timeout_counts_for_nothing(client, runtime):
    with runtime.db.transaction() as session:
        session.execute(
            insert(AddressTimeout).values(
                network="203.0.113.7/32", expires_at=utcnow() - dt.timedelta(seconds=1), created_at=utcnow()
            )
        )
    answer = client.get("/api/v2/status/heartbeat", environ_base={"REMOTE_ADDR": "203.0.113.7"})
    assert answer.status_code == 200
    assert not runtime.oversight.current().timeouts  # not even in the view
