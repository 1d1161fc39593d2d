"""Races on kudos transfers and shared keys, for real: two server processes on one PostgreSQL database, the calls
of each round fired at the same moment (tests/support/races.py), alternating between the servers.

SQLite's single writer would hide every one of these, so they run on PostgreSQL only.
"""

from __future__ import annotations

import itertools
import uuid

import pytest
import requests
from sqlalchemy import func, select

from horde.accounts.models import SharedKey
from horde.chat.models import ChatRequest
from horde.text.models import TextRequest
from tests.support.harness import postgres_servers, unique_model
from tests.support.ledger import assert_balances_match_ledger
from tests.support.native import declaration
from tests.support.races import fire_together

ROUNDS = 30
HTTP_TIMEOUT_S = 30
#: Transfers of one sender fired at once, each of TRANSFER_KUDOS, from SENDER_KUDOS: some must be refused.
SENDER_KUDOS, TRANSFER_KUDOS, TRANSFERS = 50, 10, 12
#: Crossing transfers: each of two users sends the other CROSSING of TRANSFER_KUDOS at once, from CROSSING_KUDOS.
CROSSING_KUDOS, CROSSING = 30, 4
#: Requests through one shared key fired at once, alternating text and chat, in each of two waves.
ADMISSIONS = 8
REFUSED_BY_THE_KEY = {"SharedKeyInsufficientKudos", "SharedKeyEmpty"}


@pytest.fixture(scope="module")
def horde():
    with postgres_servers() as harness:
        yield harness


def call(horde, index: int, method: str, path: str, key: str, body: dict | None = None) -> requests.Response:
    server = horde.servers[index % len(horde.servers)]
    return requests.request(
        method, f"{server.url}/api/v2{path}", json=body, headers={"apikey": key}, timeout=HTTP_TIMEOUT_S
    )


def outcome(answer) -> str:
    if isinstance(answer, Exception):
        return type(answer).__name__
    return "ok" if answer.status_code in (200, 202) else answer.json().get("rc", str(answer.status_code))


def kudos(horde, key: str) -> float:
    return call(horde, 0, "GET", "/find_user", key).json()["kudos"]


def name_of(horde, key: str) -> str:
    return call(horde, 0, "GET", "/find_user", key).json()["username"]


def transfer(horde, source: str, recipient: str, index: int):
    body = {"username": recipient, "amount": TRANSFER_KUDOS}
    return lambda: call(horde, index, "POST", "/kudos/transfer", source, body)


def test_simultaneous_transfers_never_take_a_sender_below_zero(horde):
    """Per round: one sender's TRANSFERS transfers at once to two recipients, and two users' crossing transfers,
    all in one barrier across both servers. The sender sends exactly what it held, whatever the interleaving;
    crossing transfers (which lock the same two rows in opposite roles) never deadlock; every answer is 200 or
    KudosTransferNotEnough; every balance equals its ledger after each round."""
    for round_number in range(ROUNDS):
        sender = horde.user(kudos=SENDER_KUDOS)
        recipients = [horde.user() for _ in range(2)]
        left, right = horde.user(kudos=CROSSING_KUDOS), horde.user(kudos=CROSSING_KUDOS)
        names = {key: name_of(horde, key) for key in (*recipients, left, right)}
        counter = itertools.count()
        calls = [transfer(horde, sender, names[recipients[n % 2]], next(counter)) for n in range(TRANSFERS)]
        calls += [transfer(horde, left, names[right], next(counter)) for _ in range(CROSSING)]
        calls += [transfer(horde, right, names[left], next(counter)) for _ in range(CROSSING)]
        outcomes = [outcome(answer) for answer in fire_together(calls)]
        assert set(outcomes) <= {"ok", "KudosTransferNotEnough"}, (round_number, outcomes)
        sent = outcomes[:TRANSFERS].count("ok")
        assert sent == SENDER_KUDOS // TRANSFER_KUDOS, (round_number, outcomes)
        assert kudos(horde, sender) == SENDER_KUDOS - sent * TRANSFER_KUDOS == 0
        assert sum(kudos(horde, key) for key in recipients) == sent * TRANSFER_KUDOS
        left_sent = outcomes[TRANSFERS : TRANSFERS + CROSSING].count("ok")
        right_sent = outcomes[TRANSFERS + CROSSING :].count("ok")
        assert kudos(horde, left) == CROSSING_KUDOS + (right_sent - left_sent) * TRANSFER_KUDOS >= 0
        assert kudos(horde, right) == CROSSING_KUDOS + (left_sent - right_sent) * TRANSFER_KUDOS >= 0
        assert_balances_match_ledger(horde.runtime.db)


class KeyBench:
    """An owner who lends kudos through shared keys, and a worker owner serving a text and a chat model."""

    def __init__(self, horde):
        self.horde = horde
        self.model = unique_model("keyrace")
        self.owner = horde.user(kudos=1_000_000)
        self.worker_owner = horde.user()
        self.text_worker = {"name": f"kt-{uuid.uuid4().hex[:8]}", "models": [self.model], "threads": 8, "amount": 1}
        self.chat_worker = declaration(f"kc-{uuid.uuid4().hex[:8]}", models=[self.model], threads=8)
        self.text_body = {"prompt": "Lend me", "models": [self.model], "params": {"max_length": 64}}
        self.chat_body = {"model": self.model, "messages": [{"role": "user", "content": "Lend me"}], "max_tokens": 64}
        call(horde, 0, "POST", "/generate/text/pop", self.worker_owner, self.text_worker)
        call(horde, 1, "POST", "/generate/chat/pop", self.worker_owner, self.chat_worker)
        dry = call(horde, 0, "POST", "/generate/text/async", self.owner, dict(self.text_body, dry_run=True))
        self.text_estimate = dry.json()["kudos"]

    def admission(self, key: str, index: int):
        if index % 2:
            return lambda: call(self.horde, index, "POST", "/generate/chat/async", key, self.chat_body)
        return lambda: call(self.horde, index, "POST", "/generate/text/async", key, self.text_body)

    def pop_all(self) -> list[tuple[str, str]]:
        """Every job waiting for the model, as (kind, job id)."""
        jobs = []
        while True:
            text = call(self.horde, 0, "POST", "/generate/text/pop", self.worker_owner, self.text_worker).json()
            chat = call(self.horde, 1, "POST", "/generate/chat/pop", self.worker_owner, self.chat_worker).json()
            jobs += [("text", job_id) for job_id in text.get("ids") or []]
            jobs += [("chat", chat["id"])] if chat.get("id") else []
            if not text.get("ids") and not chat.get("id"):
                return jobs

    def submission(self, kind: str, job_id: str, index: int):
        if kind == "text":
            body = {"id": job_id, "generation": " lent" * 20, "state": "ok"}
            return lambda: call(self.horde, index, "POST", "/generate/text/submit", self.worker_owner, body)
        body = {"id": job_id, "content": "lent " * 40, "usage": {"completion_tokens": 64}}
        return lambda: call(self.horde, index, "POST", "/generate/chat/submit", self.worker_owner, body)


def test_simultaneous_requests_through_one_shared_key_stay_within_its_kudos(horde):
    """Per round: a key of a few requests' kudos; ADMISSIONS requests through it at once (text and chat, both
    servers); then their jobs' submits fired together with another wave of ADMISSIONS; then the rest served.
    The key's utilized never passes its kudos, and equals what its requests were charged."""
    bench = KeyBench(horde)
    for round_number in range(ROUNDS):
        limit = 3 * bench.text_estimate + bench.text_estimate // 2
        key = call(horde, round_number, "POST", "/sharedkeys", bench.owner, {"kudos": limit}).json()["id"]
        first = [outcome(answer) for answer in fire_together([bench.admission(key, n) for n in range(ADMISSIONS)])]
        assert set(first) <= {"ok"} | REFUSED_BY_THE_KEY and "ok" in first, (round_number, first)
        held = _held(horde, key)
        assert held <= limit, (round_number, first, held)
        jobs = bench.pop_all()
        calls = [bench.submission(kind, job_id, n) for n, (kind, job_id) in enumerate(jobs)]
        calls += [bench.admission(key, n) for n in range(ADMISSIONS)]
        second = [outcome(answer) for answer in fire_together(calls)]
        assert set(second[: len(jobs)]) == {"ok"}, (round_number, second)
        assert set(second[len(jobs) :]) <= {"ok"} | REFUSED_BY_THE_KEY, (round_number, second)
        for kind, job_id in bench.pop_all():
            assert outcome(bench.submission(kind, job_id, 0)()) == "ok"
        utilized = call(horde, round_number, "GET", f"/sharedkeys/{key}", bench.owner).json()["utilized"]
        assert utilized <= limit, (round_number, first, second, utilized)
        assert utilized == _charged(horde, key) > 0, round_number
        assert call(horde, round_number, "DELETE", f"/sharedkeys/{key}", bench.owner).status_code == 200  # 3 a user
    assert_balances_match_ledger(horde.runtime.db)


def _held(horde, key: str) -> int:
    """What the key's requests hold now: their estimates (none of them charged yet)."""
    with horde.runtime.db.read() as session:
        return sum(
            session.scalar(select(func.coalesce(func.sum(table.kudos_estimate), 0)).where(table.shared_key_id == key))
            for table in (TextRequest, ChatRequest)
        )


def _charged(horde, key: str) -> int:
    with horde.runtime.db.read() as session:
        assert session.get(SharedKey, key) is not None
        return sum(
            session.scalar(select(func.coalesce(func.sum(table.kudos_charged), 0)).where(table.shared_key_id == key))
            for table in (TextRequest, ChatRequest)
        )
