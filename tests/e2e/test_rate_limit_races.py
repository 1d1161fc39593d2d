"""The rate limit is exact under concurrency: one caller's admissions fired at once over two server processes
on one PostgreSQL database are admitted up to the limit, never beyond (horde/accounts/rate_limit.py).

SQLite's single writer would hide the race, so this runs on PostgreSQL only, with the two-process pattern of
tests/e2e/test_races.py. Each round uses a caller with an empty window: a new user, or for the anonymous user
a new client address (the one trusted proxy hop names it in X-Forwarded-For).
"""

from __future__ import annotations

import collections
import functools
import uuid

import openai
import pytest
import requests

from horde.accounts.keys import ANONYMOUS_API_KEY
from tests.support.harness import Harness, postgres_servers, unique_model
from tests.support.native import declaration
from tests.support.races import fire_together

ROUNDS = 20
LIMIT = 4
EXTRA = 4
HTTP_TIMEOUT_S = 30


@pytest.fixture(scope="module")
def horde():
    with postgres_servers({"HORDE_RATE_LIMIT_PER_MINUTE": LIMIT, "HORDE_TRUSTED_PROXY_HOPS": 1}) as harness:
        yield harness


@pytest.fixture(scope="module")
def model(horde):
    """A model of its own, served by one online worker with threads to spare."""
    name = unique_model("rate")
    body = declaration(f"rate-{uuid.uuid4().hex[:8]}", models=[name], threads=50)
    response = requests.post(
        f"{horde.url}/api/v2/generate/chat/pop", json=body, headers={"apikey": horde.user()}, timeout=HTTP_TIMEOUT_S
    )
    assert response.status_code == 200, response.text
    return name


def body_of(kind: str, model: str) -> dict:
    if kind == "text":  # queued even with no text worker online
        return {"models": [model], "prompt": "Once", "params": {"max_length": 16}}
    return {"model": model, "messages": [{"role": "user", "content": "Hello"}], "max_tokens": 16}


def queue(server, kind: str, key: str, model: str, address: str) -> requests.Response:
    headers = {"apikey": key, "X-Forwarded-For": address}
    url = f"{server.url}/api/v2/generate/{kind}/async"
    return requests.post(url, json=body_of(kind, model), headers=headers, timeout=HTTP_TIMEOUT_S)


def outcome(response) -> str:
    if isinstance(response, Exception):
        return type(response).__name__
    return "202" if response.status_code == 202 else response.json().get("rc", str(response.status_code))


def race(horde: Harness, model: str, key_of_round, kinds: tuple[str, ...] = ("chat",)) -> collections.Counter:
    """LIMIT + EXTRA admissions of one caller at once, alternating between the servers, every round; with two
    kinds, each kind's calls go to both servers."""
    tally: collections.Counter = collections.Counter()
    for round_index in range(ROUNDS):
        key, address = key_of_round(round_index)
        calls = [
            functools.partial(queue, horde.servers[index % 2], kinds[(index // 2) % len(kinds)], key, model, address)
            for index in range(LIMIT + EXTRA)
        ]
        answers = fire_together(calls)
        outcomes = sorted(outcome(answer) for answer in answers)
        tally[", ".join(outcomes)] += 1
        assert outcomes == ["202"] * LIMIT + ["rate_limit_exceeded"] * EXTRA
        for answer, call in zip(answers, calls, strict=True):
            kind = call.args[1]
            if answer.status_code == 429:
                assert answer.headers["Retry-After"] == "60" and answer.headers["X-RateLimit-Limit"] == str(LIMIT)
            else:  # out of the queue, so that the next rounds' estimates stay short
                request_id = answer.json()["id"]
                requests.delete(
                    f"{horde.url}/api/v2/generate/{kind}/status/{request_id}",
                    headers={"apikey": key, "X-Forwarded-For": address},
                    timeout=HTTP_TIMEOUT_S,
                )
    return tally


def test_one_users_simultaneous_admissions_stop_at_the_limit(horde, model):
    tally = race(horde, model, lambda _: (horde.user(), "198.51.100.1"))
    print(f"\n{ROUNDS} rounds of {LIMIT + EXTRA} simultaneous admissions of one user, limit {LIMIT}: {dict(tally)}")


def test_one_anonymous_address_simultaneous_admissions_stop_at_the_limit(horde, model):
    run = uuid.uuid4().int % 250
    tally = race(horde, model, lambda index: (ANONYMOUS_API_KEY, f"10.{run}.{index}.7"))
    print(f"\n{ROUNDS} rounds of {LIMIT + EXTRA} simultaneous anonymous admissions from one address: {dict(tally)}")


def test_one_users_simultaneous_text_admissions_stop_at_the_limit(horde, model):
    tally = race(horde, model, lambda _: (horde.user(), "198.51.100.1"), kinds=("text",))
    print(f"\n{ROUNDS} rounds of {LIMIT + EXTRA} simultaneous text admissions of one user: {dict(tally)}")


def test_one_users_simultaneous_chat_and_text_admissions_share_one_budget(horde, model):
    tally = race(horde, model, lambda _: (horde.user(), "198.51.100.1"), kinds=("chat", "text"))
    print(f"\n{ROUNDS} rounds of {LIMIT + EXTRA} simultaneous chat and text admissions of one user: {dict(tally)}")


def test_one_anonymous_addresss_simultaneous_chat_and_text_admissions_share_its_budget(horde, model):
    run = uuid.uuid4().int % 250
    tally = race(horde, model, lambda index: (ANONYMOUS_API_KEY, f"10.{run}.{index + 100}.9"), kinds=("chat", "text"))
    print(f"\n{ROUNDS} rounds of {LIMIT + EXTRA} simultaneous anonymous chat and text admissions: {dict(tally)}")


def test_the_openai_sdk_gets_a_rate_limit_error_once_text_requests_fill_the_budget(horde, model):
    """Through /v1 with the OpenAI SDK, on the other server process: the text requests count against chat."""
    key = horde.user()
    for index in range(LIMIT):
        assert queue(horde.servers[index % 2], "text", key, model, "198.51.100.1").status_code == 202
    client = horde.openai(key, server=horde.servers[1])
    with pytest.raises(openai.RateLimitError) as refused:
        client.chat.completions.create(model=model, messages=[{"role": "user", "content": "Hello"}], max_tokens=16)
    error = refused.value
    assert error.code == "rate_limit_exceeded"
    assert error.body["message"] == f"Too many requests: at most {LIMIT} chat and text requests a minute per user."
    assert error.response.headers["Retry-After"] == "60"


@pytest.fixture(scope="module")
def long_model(horde):
    """A model whose worker generates up to 8192 tokens: a request of 5000 is over the free allowance (4096 on an
    idle pool), so its admission locks the caller's row for the kudos check."""
    name = unique_model("rate-long")
    body = declaration(
        f"rate-long-{uuid.uuid4().hex[:8]}", models=[name], threads=50, max_length=8192, max_context_length=16384
    )
    response = requests.post(
        f"{horde.url}/api/v2/generate/chat/pop", json=body, headers={"apikey": horde.user()}, timeout=HTTP_TIMEOUT_S
    )
    assert response.status_code == 200, response.text
    return name


def test_admissions_over_and_under_the_free_allowance_fired_at_once_neither_deadlock_nor_overrun(horde, long_model):
    """An admission over the free allowance locks its caller's row (the kudos check) and an INSERT's foreign key
    reads that row: the turn comes first in both, so one caller's mixed admissions take turns without a deadlock,
    and stop at the limit."""
    tally: collections.Counter = collections.Counter()
    for _ in range(ROUNDS):
        key = horde.user(kudos=10**7)

        def admit(server, max_tokens: int, key=key):
            body = {"model": long_model, "messages": [{"role": "user", "content": "Hello"}], "max_tokens": max_tokens}
            return requests.post(
                f"{server.url}/api/v2/generate/chat/async", json=body, headers={"apikey": key}, timeout=HTTP_TIMEOUT_S
            )

        calls = [
            functools.partial(admit, horde.servers[index % 2], 5000 if (index // 2) % 2 else 16)
            for index in range(LIMIT + EXTRA)
        ]
        answers = fire_together(calls)
        outcomes = sorted(outcome(answer) for answer in answers)
        tally[", ".join(outcomes)] += 1
        assert outcomes == ["202"] * LIMIT + ["rate_limit_exceeded"] * EXTRA
        for answer in answers:
            if answer.status_code == 202:
                requests.delete(
                    f"{horde.url}/api/v2/generate/chat/status/{answer.json()['id']}",
                    headers={"apikey": key},
                    timeout=HTTP_TIMEOUT_S,
                )
    print(f"\n{ROUNDS} rounds of {LIMIT + EXTRA} simultaneous admissions over and under the allowance: {dict(tally)}")
