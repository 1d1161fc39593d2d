"""Moderation under races, for real: two server processes on one PostgreSQL database (with Redis between them),
the calls of each round fired at the same moment (tests/support/races.py), alternating between the servers.

- Awards, admins' changes of kudos and the user's own transfers on one balance at once: every award and change
  lands, no transfer takes the balance below zero, the balance is exactly what the answers say, and every balance
  equals its ledger.
- A flag fired among the user's transfers: each transfer lands wholly before the flag or is refused, and none after.
- Changes of one user fired at once: the trail's records chain (each one's `before` is the previous one's `after`),
  since each change reads the user under its row lock.
- A change made on one server holds there from the next request, and on the other as soon as it hears the bus: a
  timeout, maintenance.
"""

from __future__ import annotations

import functools
import itertools
import uuid

import pytest
import requests

from horde.accounts import roles
from horde.accounts import service as accounts
from tests.support.databases import redis_url
from tests.support.harness import postgres_servers
from tests.support.ledger import assert_balances_match_ledger
from tests.support.processes import wait_until
from tests.support.races import fire_together

ROUNDS = 20
HTTP_TIMEOUT_S = 30
START_KUDOS, AWARD, TRANSFER = 100, 7, 30
AWARDS, ADJUSTMENTS, TRANSFERS = 6, 4, 6
ADJUSTMENT_KUDOS = (11, -3, 5, -2)
#: Well within the view's VIEW_S (10 s): a change that the other server heard from the bus, not from its age.
HEARD_WITHIN_S = 2.0
CONCURRENCY, ADMISSIONS = 3, 8


@pytest.fixture(scope="module")
def horde():
    with postgres_servers({"HORDE_TRUSTED_PROXY_HOPS": "1"}) as harness:
        yield harness


def call(horde, index: int, method: str, path: str, key: str | None, body: dict | None = None, **headers):
    server = horde.servers[index % len(horde.servers)]
    if key:
        headers["apikey"] = key
    return requests.request(method, f"{server.url}/api/v2{path}", json=body, headers=headers, timeout=HTTP_TIMEOUT_S)


def outcome(answer) -> str:
    if isinstance(answer, Exception):
        return type(answer).__name__
    return "ok" if answer.status_code in (200, 202) else answer.json().get("rc", str(answer.status_code))


def user_of(horde, role: str | None = None, kudos: int = 0) -> tuple[int, str]:
    """A new user (of `role`), made before any server saw its key."""
    with horde.runtime.db.transaction() as session:
        user, key = accounts.create_user(session, f"race-{uuid.uuid4().hex[:10]}", kudos=kudos)
        if role:
            roles.set_role(session, user.username, role)
        return user.id, key


def kudos_of(horde, key: str) -> float:
    return call(horde, 0, "GET", "/find_user", key).json()["kudos"]


def test_awards_changes_and_transfers_on_one_balance_at_once_add_up_exactly(horde):
    _, moderator = user_of(horde, "moderator")
    _, admin = user_of(horde, "admin")
    for round_number in range(ROUNDS):
        user_id, key = user_of(horde, kudos=START_KUDOS)
        recipient_id, _ = user_of(horde)
        award = {"username": f"x#{user_id}", "amount": AWARD}
        transfer = {"username": f"x#{recipient_id}", "amount": TRANSFER}
        planned = [("POST", "/kudos/award", moderator, award)] * AWARDS
        planned += [("PUT", f"/users/{user_id}", admin, {"kudos": amount}) for amount in ADJUSTMENT_KUDOS]
        planned += [("POST", "/kudos/transfer", key, transfer)] * TRANSFERS
        calls = [functools.partial(call, horde, n, *request) for n, request in enumerate(planned)]
        outcomes = [outcome(answer) for answer in fire_together(calls)]
        assert set(outcomes[: AWARDS + ADJUSTMENTS]) == {"ok"}, (round_number, outcomes)
        assert set(outcomes[AWARDS + ADJUSTMENTS :]) <= {"ok", "KudosTransferNotEnough"}, (round_number, outcomes)
        sent = outcomes[AWARDS + ADJUSTMENTS :].count("ok")
        expected = START_KUDOS + AWARDS * AWARD + sum(ADJUSTMENT_KUDOS) - sent * TRANSFER
        assert kudos_of(horde, key) == expected >= 0, (round_number, outcomes)
    assert_balances_match_ledger(horde.runtime.db)


def test_a_flag_among_transfers_lets_none_through_after_it(horde):
    _, moderator = user_of(horde, "moderator")
    for round_number in range(ROUNDS):
        user_id, key = user_of(horde, kudos=START_KUDOS * 10)
        recipient_id, recipient_key = user_of(horde)
        transfer = ("POST", "/kudos/transfer", key, {"username": f"x#{recipient_id}", "amount": TRANSFER})
        planned = [transfer] * TRANSFERS
        planned.insert(TRANSFERS // 2, ("PUT", f"/users/{user_id}", moderator, {"flagged": True}))
        calls = [functools.partial(call, horde, n, *request) for n, request in enumerate(planned)]
        outcomes = [outcome(answer) for answer in fire_together(calls)]
        transfers = outcomes[: TRANSFERS // 2] + outcomes[TRANSFERS // 2 + 1 :]
        assert outcomes[TRANSFERS // 2] == "ok", (round_number, outcomes)
        assert set(transfers) <= {"ok", "SourceAccountFlagged"}, (round_number, outcomes)
        assert kudos_of(horde, recipient_key) == transfers.count("ok") * TRANSFER, (round_number, outcomes)
        for index in range(2):  # from now on, on either server: the transfer's compare-and-set reads the flag
            assert outcome(call(horde, index, *transfer)) == "SourceAccountFlagged"
    assert_balances_match_ledger(horde.runtime.db)


def test_changes_of_one_user_at_once_chain_in_the_trail(horde):
    _, moderator = user_of(horde, "moderator")
    for round_number in range(ROUNDS // 2):
        user_id, _ = user_of(horde)
        values = list(range(1, 9))
        planned = [("PUT", f"/users/{user_id}", moderator, {"concurrency": value}) for value in values]
        calls = [functools.partial(call, horde, n, *request) for n, request in enumerate(planned)]
        assert {outcome(answer) for answer in fire_together(calls)} == {"ok"}, round_number
        trail = call(horde, 0, "GET", "/operations/audit", moderator).json()["entries"]
        mine = [entry for entry in reversed(trail) if entry["target"] == str(user_id)]
        assert len(mine) == len(values)
        assert mine[0]["before"] == {"concurrency": 30}
        for earlier, later in itertools.pairwise(mine):
            assert later["before"] == earlier["after"], (round_number, mine)
        assert (
            call(horde, 1, "GET", f"/users/{user_id}", None).json()["concurrency"] == mine[-1]["after"]["concurrency"]
        )


def test_a_change_on_one_server_holds_there_at_once_and_on_the_other_once_it_hears_the_bus(horde):
    """The changing server answers after Redis acknowledged the event: from then on it is in the other process's
    connection, which reads it as it comes (well within VIEW_S, which alone would take up to 10 s)."""
    if not redis_url():
        pytest.skip("the servers hear each other's changes through Redis: HORDE_TEST_REDIS_URL")
    _, moderator = user_of(horde, "moderator")
    _, admin = user_of(horde, "admin")
    _, key = user_of(horde, kudos=1000)
    chat = {"model": "race/none", "messages": [{"role": "user", "content": "Hi"}]}

    def seen(server: int, expected: str, *request, **headers) -> None:
        wait_until(lambda: outcome(call(horde, server, *request, **headers)) == expected, HEARD_WITHIN_S, expected)

    for round_number in range(ROUNDS):
        here, there = round_number % 2, (round_number + 1) % 2
        forwarded = {"X-Forwarded-For": f"198.51.100.{round_number + 1}"}
        address = {"ipaddr": forwarded["X-Forwarded-For"]}
        assert outcome(call(horde, there, "GET", "/find_user", key, **forwarded)) == "ok"
        assert outcome(call(horde, here, "POST", "/operations/ipaddr", moderator, address | {"hours": 1})) == "ok"
        assert outcome(call(horde, here, "GET", "/find_user", key, **forwarded)) == "TimeoutIP", round_number
        seen(there, "TimeoutIP", "GET", "/find_user", key, **forwarded)
        assert outcome(call(horde, here, "DELETE", "/operations/ipaddr", moderator, address)) == "ok"
        assert outcome(call(horde, here, "GET", "/find_user", key, **forwarded)) == "ok", round_number
        seen(there, "ok", "GET", "/find_user", key, **forwarded)

        assert outcome(call(horde, here, "PUT", "/status/modes", admin, {"maintenance_mode": True})) == "ok"
        assert outcome(call(horde, here, "POST", "/generate/chat/async", key, chat)) == "MaintenanceMode"
        seen(there, "MaintenanceMode", "POST", "/generate/chat/async", key, chat)
        assert outcome(call(horde, here, "PUT", "/status/modes", admin, {"maintenance_mode": False})) == "ok"
        assert outcome(call(horde, here, "POST", "/generate/chat/async", key, chat)) == "model_not_found"
        seen(there, "model_not_found", "POST", "/generate/chat/async", key, chat)


def test_admissions_at_once_never_pass_the_users_concurrency(horde):
    """Per round: a user of concurrency CONCURRENCY fires ADMISSIONS chat and text requests at once, across both
    servers: exactly CONCURRENCY of each kind are admitted (the rest TooManyPrompts), whatever the interleaving."""
    _, moderator = user_of(horde, "moderator")
    model = f"race/concurrency-{uuid.uuid4().hex[:8]}"
    _, worker_key = user_of(horde)
    call(horde, 0, "POST", "/generate/text/pop", worker_key, {"name": f"cc-{uuid.uuid4().hex[:8]}", "models": [model]})
    pop = {"name": f"cc-{uuid.uuid4().hex[:8]}", "models": [model], "max_length": 512, "max_context_length": 4096}
    call(
        horde,
        1,
        "POST",
        "/generate/chat/pop",
        worker_key,
        pop | {"features": [], "guarantees": [], "bridge_agent": "t:1:x"},
    )
    chat_body = {"model": model, "messages": [{"role": "user", "content": "Hi"}], "availability_mode": "wait"}
    chat = ("POST", "/generate/chat/async", None, chat_body)  # the queue grows round after round: no fail_fast
    text = ("POST", "/generate/text/async", None, {"prompt": "Hi", "models": [model], "params": {"max_length": 16}})
    for round_number in range(ROUNDS):
        user_id, key = user_of(horde, kudos=100_000)
        assert outcome(call(horde, 0, "PUT", f"/users/{user_id}", moderator, {"concurrency": CONCURRENCY})) == "ok"
        planned = [(method, path, key, body) for method, path, _, body in (chat, text) for _ in range(ADMISSIONS)]
        calls = [functools.partial(call, horde, n, *request) for n, request in enumerate(planned)]
        outcomes = [outcome(answer) for answer in fire_together(calls)]
        admitted = ["ok" if result == "202" else result for result in outcomes]
        for kind in (admitted[:ADMISSIONS], admitted[ADMISSIONS:]):
            assert set(kind) <= {"ok", "TooManyPrompts"}, (round_number, outcomes)
            assert kind.count("ok") == CONCURRENCY, (round_number, outcomes)
