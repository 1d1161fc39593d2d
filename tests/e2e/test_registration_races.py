"""Registrations at once, for real: two server processes on one PostgreSQL database, each round's calls fired at the
same moment (tests/support/races.py), alternating between the servers. The per-address count and an invite's uses
are compare-and-sets in the registration's transaction: whatever the interleaving, exactly the allowed number of
accounts is made, and the refused calls leave nothing (no user, no ledger entry, no use, no count).

SQLite's single writer would hide these races, so they run on PostgreSQL only.
"""

from __future__ import annotations

import collections

import pytest
import requests
from sqlalchemy import func, select

from horde.accounts.models import KudosEntry, User
from horde.registration import invites
from horde.registration.models import Invite, RegistrationCount
from tests.support.harness import postgres_servers
from tests.support.races import fire_together

ROUNDS = 12
CALLS = 50
PER_ADDRESS = 3
INVITE_USES = 5
NEW_USER_KUDOS = 10
HTTP_TIMEOUT_S = 60


@pytest.fixture(scope="module")
def horde():
    settings = {
        "HORDE_REGISTRATION": "invite",
        "HORDE_REGISTRATIONS_PER_ADDRESS_PER_DAY": PER_ADDRESS,
        "HORDE_NEW_USER_KUDOS": NEW_USER_KUDOS,
        "HORDE_TRUSTED_PROXY_HOPS": 1,  # each round's client address is the X-Forwarded-For the test sends
    }
    with postgres_servers(settings) as harness:
        yield harness


def _invite(horde, uses: int) -> str:
    with horde.runtime.db.transaction() as session:
        return invites.create(session, uses)


def _register(horde, index: int, code: str, address: str):
    server = horde.servers[index % len(horde.servers)]
    return lambda: requests.post(
        f"{server.url}/api/v2/register",
        json={"username": f"racer {index}", "invite_code": code},
        headers={"X-Forwarded-For": address},
        timeout=HTTP_TIMEOUT_S,
    )


def _outcome(answer) -> str:
    if isinstance(answer, Exception):
        return type(answer).__name__
    return "made" if answer.status_code == 201 else answer.json().get("rc", str(answer.status_code))


def _totals(horde) -> tuple[int, int, int, int]:
    """Accounts, their ledger entries, invite uses, registrations counted."""
    with horde.runtime.db.read() as session:
        return (
            session.scalar(select(func.count()).select_from(User).where(User.anonymous.is_(False))),
            session.scalar(select(func.count()).select_from(KudosEntry)),
            session.scalar(select(func.coalesce(func.sum(Invite.used), 0))),
            session.scalar(select(func.coalesce(func.sum(RegistrationCount.registered), 0))),
        )


def test_fifty_registrations_from_one_address_make_exactly_the_daily_number(horde):
    """Per round: a fresh address and a plentiful code; CALLS registrations at once make exactly PER_ADDRESS
    accounts, the rest are 429 TooManyRegistrations, and only the made accounts used the code."""
    for round_number in range(ROUNDS):
        before = _totals(horde)
        code = _invite(horde, uses=1000)
        address = f"2001:db8::{round_number + 1:x}"  # a documentation address: only ever a header's value
        answers = fire_together([_register(horde, index, code, address) for index in range(CALLS)])
        outcomes = collections.Counter(_outcome(answer) for answer in answers)
        assert outcomes == {"made": PER_ADDRESS, "TooManyRegistrations": CALLS - PER_ADDRESS}, round_number
        made = [answer.json() for answer in answers if not isinstance(answer, Exception) and answer.status_code == 201]
        assert len({account["id"] for account in made}) == PER_ADDRESS
        assert _totals(horde) == tuple(total + PER_ADDRESS for total in before), (
            round_number
        )  # one account, one grant, one use and one count each


def test_an_invite_makes_exactly_its_uses_when_many_register_with_it_at_once(horde):
    """Per round: a code of INVITE_USES uses, CALLS registrations with it from as many addresses at once."""
    for round_number in range(ROUNDS):
        before = _totals(horde)
        code = _invite(horde, uses=INVITE_USES)
        calls = [
            _register(horde, index, code, f"2001:db8:1:{round_number + 1:x}::{index + 1:x}") for index in range(CALLS)
        ]
        outcomes = collections.Counter(_outcome(answer) for answer in fire_together(calls))
        assert outcomes == {"made": INVITE_USES, "InvalidInviteCode": CALLS - INVITE_USES}, round_number
        assert _totals(horde) == tuple(total + INVITE_USES for total in before), round_number
