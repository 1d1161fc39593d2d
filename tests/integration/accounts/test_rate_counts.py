"""The rate budget sums each caller's admissions by the second: a second is summed until RATE_WINDOW_S after it,
each admission adds one to its own, a refused one adds nothing, and the sweeper forgets what no budget sums."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from horde.accounts import rate_limit
from horde.accounts.models import RateCount
from tests.support.native import pop

BODY = {"model": "m1", "messages": [{"role": "user", "content": "Hello"}]}
NOW_S = 1_800_000_000
LIMIT = 3


@pytest.fixture
def stopped_clock(monkeypatch):
    """The counts' clock held at NOW_S, so that a test names the seconds at the window's edge exactly."""
    monkeypatch.setattr(rate_limit, "epoch_second", lambda: NOW_S)


@pytest.fixture
def limited(client, make_user, runtime):
    _, owner = make_user("owner")
    pop(client, owner, threads=50)
    runtime.settings = runtime.settings.replace(rate_limit_per_minute=LIMIT)


def admit(client, key=None, address="203.0.113.7"):
    headers = {"apikey": key} if key else {}
    return client.post("/api/v2/generate/chat/async", json=BODY, headers=headers, environ_base={"REMOTE_ADDR": address})


def counts(runtime) -> dict[tuple[int, str, int], int]:
    with runtime.db.read() as session:
        rows = session.execute(select(RateCount)).scalars()
        return {(row.user_id, row.client_address, row.epoch_second): row.admitted for row in rows}


def store(runtime, user_id: int, epoch_second: int, admitted: int, address: str = rate_limit.WHOLE_USER) -> None:
    with runtime.db.transaction() as session:
        session.add(RateCount(user_id=user_id, client_address=address, epoch_second=epoch_second, admitted=admitted))


WINDOW_EDGES = [(rate_limit.RATE_WINDOW_S, False), (rate_limit.RATE_WINDOW_S + 1, True)]


@pytest.mark.parametrize(("seconds_ago", "admitted"), WINDOW_EDGES)
def test_a_second_is_summed_until_the_window_has_passed_it_whole(
    client, make_user, runtime, limited, stopped_clock, seconds_ago, admitted
):
    """An admission made in the first instant of a second leaves the budget RATE_WINDOW_S later at the
    earliest: never before, so no window of RATE_WINDOW_S holds more than the limit."""
    user, key = make_user("client", kudos=100)
    store(runtime, user.id, NOW_S - seconds_ago, LIMIT)
    answer = admit(client, key)
    assert answer.status_code == (202 if admitted else 429), answer.json


def test_each_admission_adds_one_to_its_callers_second_and_a_refused_one_adds_nothing(
    client, make_user, runtime, limited, stopped_clock
):
    user, key = make_user("client", kudos=100)
    store(runtime, user.id, NOW_S - 10, 1)
    assert [admit(client, key).status_code for _ in range(3)] == [202, 202, 429]
    assert counts(runtime) == {(user.id, "", NOW_S - 10): 1, (user.id, "", NOW_S): 2}


def test_the_anonymous_user_is_counted_per_client_address(client, runtime, limited, stopped_clock):
    assert [admit(client, address="203.0.113.7").status_code for _ in range(2)] == [202, 202]
    assert admit(client, address="198.51.100.9").status_code == 202
    anonymous = {address: admitted for (_, address, _), admitted in counts(runtime).items()}
    assert anonymous == {"203.0.113.7": 2, "198.51.100.9": 1}


def test_the_sweeper_forgets_the_seconds_no_budget_sums_and_keeps_the_rest(make_user, runtime, stopped_clock):
    user, _ = make_user("client")
    for seconds_ago in (rate_limit.RATE_WINDOW_S + 5, rate_limit.RATE_WINDOW_S + 1, rate_limit.RATE_WINDOW_S, 0):
        store(runtime, user.id, NOW_S - seconds_ago, 1)
    with runtime.db.autocommit() as session:
        assert rate_limit.forget_past_seconds(session) == 2
    assert sorted(second for (_, _, second) in counts(runtime)) == [NOW_S - rate_limit.RATE_WINDOW_S, NOW_S]
