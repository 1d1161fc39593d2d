"""Usage by day under concurrent settlements, for real: two server processes on one PostgreSQL database, the
replies of one requester's chat requests and text generations submitted at once through both, then the stats
rollup: the requester's day counts every generation once, as its records do (requested_generations, tokens)."""

from __future__ import annotations

import datetime as dt
import uuid

import pytest
import requests
from sqlalchemy import func, select

from horde.accounts.models import User
from horde.chat import stats as chat_stats
from horde.stats import rollup
from horde.stats.models import ALL_MODELS, QueueSample
from horde.text import stats as text_stats
from horde.timeutil import utcnow
from tests.support.harness import postgres_servers, unique_model
from tests.support.native import declaration
from tests.support.processes import wait_until
from tests.support.races import fire_together

HTTP_TIMEOUT_S = 30
#: A sweep runs every second or so: its first sample comes within a few.
SAMPLE_WAIT_S = 30
CHAT_REQUESTS = 8
TEXT_GENERATIONS = 8
#: Past the rollup's lag: a rollup at this moment counts everything served until now.
ROLLED = dt.timedelta(seconds=rollup.ROLLUP_LAG_S + 60)


@pytest.fixture(scope="module")
def horde():
    with postgres_servers() as harness:
        yield harness


def _native(server, method: str, path: str, key: str, body: dict | None = None) -> requests.Response:
    return requests.request(
        method, f"{server.url}/api/v2{path}", json=body, headers={"apikey": key}, timeout=HTTP_TIMEOUT_S
    )


def _ok(response: requests.Response) -> dict:
    assert response.status_code in (200, 202), response.text
    return response.json()


def test_concurrent_settlements_through_two_servers_count_once_in_the_day(horde):
    servers = horde.servers
    owner, requester = horde.user(), horde.user(kudos=100_000)
    requester_id = _ok(_native(servers[0], "GET", "/find_user", requester))["id"]
    model = unique_model("usage")
    chat_worker = declaration(f"usage-{uuid.uuid4().hex[:8]}", models=[model], threads=50)
    text_worker = {"name": f"usage-text-{uuid.uuid4().hex[:8]}", "models": [model], "max_length": 64, "threads": 50}
    _ok(_native(servers[0], "POST", "/generate/chat/pop", owner, chat_worker))
    _ok(_native(servers[1], "POST", "/generate/text/pop", owner, text_worker))

    submits = []
    for index in range(CHAT_REQUESTS):
        body = {"model": model, "messages": [{"role": "user", "content": "Hello"}], "max_tokens": 32}
        _ok(_native(servers[index % 2], "POST", "/generate/chat/async", requester, body))
        job = _ok(_native(servers[index % 2], "POST", "/generate/chat/pop", owner, chat_worker))["id"]
        reply = {"id": job, "content": "Hi there " * (index + 1), "usage": {"completion_tokens": 3 * (index + 1)}}
        submits.append((servers[(index + 1) % 2], "/generate/chat/submit", reply))
    body = {"prompt": "Once", "models": [model], "params": {"n": TEXT_GENERATIONS, "max_length": 32}}
    _ok(_native(servers[0], "POST", "/generate/text/async", requester, body))
    for index in range(TEXT_GENERATIONS):
        text_pop = dict(text_worker, amount=1)
        job = _ok(_native(servers[index % 2], "POST", "/generate/text/pop", owner, text_pop))["id"]
        submits.append((servers[(index + 1) % 2], "/generate/text/submit", {"id": job, "generation": "x" * index}))

    answers = fire_together(
        [
            lambda server=server, path=path, reply=reply: _native(server, "POST", path, owner, reply)
            for server, path, reply in submits
        ]
    )
    assert [answer.status_code for answer in answers] == [200] * len(submits), [a.text for a in answers]

    for rows in (chat_stats.SERVED, text_stats.SERVED):
        rollup.roll_up_when_due(horde.runtime.db, rows, utcnow() + ROLLED)
    with horde.runtime.db.read() as session:
        user = session.get(User, requester_id)
        generations, tokens = user.requested_generations, user.requested_tokens
    usage = _ok(_native(servers[1], "GET", f"/users/{requester_id}/usage?days=1", requester))["days"]
    assert generations == CHAT_REQUESTS + TEXT_GENERATIONS
    assert [(day["requests"], day["tokens"]) for day in usage] == [(generations, tokens)]


def test_the_servers_housekeeping_samples_each_minute_once(horde):
    """Both servers' sweepers sample the queue: the current minute gets its row of every model together, once."""

    def sampled() -> list:
        with horde.runtime.db.read() as session:
            return session.execute(
                select(QueueSample.minute, func.count())
                .where(QueueSample.model == ALL_MODELS)
                .group_by(QueueSample.minute)
            ).all()

    wait_until(lambda: sampled(), SAMPLE_WAIT_S, "a queue sample from the servers' housekeeping")
    assert all(count == 1 for _, count in sampled())
    series = _ok(requests.get(f"{horde.servers[0].url}/api/v2/stats/series?minutes=10", timeout=HTTP_TIMEOUT_S))
    assert series["series"]["workers"][-1] is not None or series["series"]["workers"][-2] is not None
