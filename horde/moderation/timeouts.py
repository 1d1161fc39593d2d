"""IP timeouts: /api/v2/operations/ipaddr (a moderator times out an address or a network, lifts it, lists them)
and /api/v2/operations/block_worker_ipaddr/{worker_id} (a worker's address, as its latest check-in recorded it).

Each change is one transaction with its audit record, then every process's view is dropped (horde/oversight/
view.py), so that from the next request on a call from the address is 403 TimeoutIP on both APIs and /v1. A timeout
past its expiry counts for nothing; the next change deletes such rows. At most MAX_ADDRESS_TIMEOUTS at once.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
from typing import TYPE_CHECKING

from sqlalchemy import delete, func, select, update
from sqlalchemy.orm import Session

from horde import errors
from horde.oversight import trail
from horde.oversight.addresses import IPNetwork, parse_network, shown, worker_network
from horde.oversight.models import AddressTimeout
from horde.oversight.trail import Actor, Done, Target
from horde.oversight.view import MAX_ADDRESS_TIMEOUTS
from horde.oversight.view import changed as oversight_changed
from horde.registry.manage import live_worker
from horde.storage.database import insert_ignoring_duplicates, is_postgresql
from horde.timeutil import utcnow

if TYPE_CHECKING:
    from horde.runtime import Runtime

SECONDS_PER_HOUR = 3600


def listing(runtime: Runtime) -> list[dict]:
    """Every address and network in timeout, with the seconds left, the soonest to end first."""
    now = utcnow()
    with runtime.db.read() as session:
        rows = session.execute(
            select(AddressTimeout.network, AddressTimeout.expires_at)
            .where(AddressTimeout.expires_at > now)
            .order_by(AddressTimeout.expires_at, AddressTimeout.network)
            .limit(MAX_ADDRESS_TIMEOUTS)
        ).all()
    return [_entry(network, expires, now) for network, expires in rows]


def matching(runtime: Runtime, ipaddr: str) -> list[dict]:
    """The timeouts that cover an address, or that overlap a network."""
    wanted = parse_network(ipaddr)
    return [entry for entry in listing(runtime) if ipaddress.ip_network(entry["ipaddr"]).overlaps(wanted)]


def _entry(network: str, expires: dt.datetime, now: dt.datetime) -> dict:
    return {"ipaddr": shown(network), "seconds": max(1, int((expires - now).total_seconds()))}


def time_out(runtime: Runtime, actor: Actor, ipaddr: str, hours: int, reason: str | None = None) -> None:
    """Put an address or network in timeout for `hours` (again: from now, for that long)."""
    put(runtime, actor, parse_network(ipaddr), dt.timedelta(hours=hours), reason)


def put(runtime: Runtime, actor: Actor, network: IPNetwork, length: dt.timedelta, reason: str | None) -> None:
    now = utcnow()
    text = str(network)
    with runtime.db.transaction() as session:
        session.execute(delete(AddressTimeout).where(AddressTimeout.expires_at <= now))
        before = _expiry(session, text, lock=True)
        if before is None and _live_count(session) >= MAX_ADDRESS_TIMEOUTS:
            raise errors.BadRequest(
                f"At most {MAX_ADDRESS_TIMEOUTS} addresses and networks can be in timeout at once; lift some first.",
                param="ipaddr",
            )
        expires = now + length
        if before is None:
            row = {"network": text, "expires_at": expires, "created_at": now}
            insert_ignoring_duplicates(session, AddressTimeout, [row], "network")
        session.execute(update(AddressTimeout).where(AddressTimeout.network == text).values(expires_at=expires))
        trail.record(
            session,
            actor,
            Done.TIME_OUT_ADDRESS,
            Target.ADDRESS,
            text,
            before={"expires_at": _iso(before)} if before else None,
            after={"expires_at": _iso(expires)},
            reason=reason,
        )
    oversight_changed(runtime)


def lift(runtime: Runtime, actor: Actor, ipaddr: str, reason: str | None = None) -> bool:
    """End the timeout of an address or network, as it was timed out; whether there was one."""
    return lift_network(runtime, actor, parse_network(ipaddr), reason)


def lift_network(runtime: Runtime, actor: Actor, network: IPNetwork, reason: str | None) -> bool:
    text, now = str(network), utcnow()
    with runtime.db.transaction() as session:
        before = _expiry(session, text, lock=True)
        session.execute(delete(AddressTimeout).where(AddressTimeout.network == text))
        live = before is not None and before > now
        if before is not None and live:
            trail.record(
                session,
                actor,
                Done.FREE_ADDRESS,
                Target.ADDRESS,
                text,
                before={"expires_at": _iso(before)},
                reason=reason,
            )
    if before is not None:
        oversight_changed(runtime)
    return live


def block_worker(runtime: Runtime, actor: Actor, worker_id: str, days: int, reason: str | None = None) -> None:
    """Time out the address a worker last checked in from (its IPv6 address's /64) for `days`."""
    put(runtime, actor, _worker_network(runtime, worker_id), dt.timedelta(days=days), reason)


def unblock_worker(runtime: Runtime, actor: Actor, worker_id: str, reason: str | None = None) -> bool:
    return lift_network(runtime, actor, _worker_network(runtime, worker_id), reason)


def _worker_network(runtime: Runtime, worker_id: str) -> IPNetwork:
    with runtime.db.read() as session:
        address = live_worker(session, worker_id).ip_address
    network = worker_network(address) if address else None
    if network is None:
        raise errors.BadRequest(
            f"Worker '{worker_id}' has no recorded address: it has not checked in since addresses were recorded.",
            param="worker_id",
        )
    return network


def _expiry(session: Session, network: str, *, lock: bool) -> dt.datetime | None:
    query = select(AddressTimeout.expires_at).where(AddressTimeout.network == network)
    if lock and is_postgresql(session):
        query = query.with_for_update()
    return session.scalar(query)


def _live_count(session: Session) -> int:
    return session.scalar(select(func.count()).select_from(AddressTimeout)) or 0


def _iso(moment: dt.datetime) -> str:
    return moment.isoformat(timespec="seconds") + "Z"
