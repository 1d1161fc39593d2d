"""A text pop runs on every poll of every text worker: the owner's key comes from the process's identity
cache, as on the chat pop, and the pop's own statements do the rest."""

import datetime as dt

import pytest
from sqlalchemy import update

from horde.chat.snapshots import Snapshots
from horde.text.models import JOB_SUBMITTED, TextJob
from horde.timeutil import utcnow
from tests.support.statements import statements
from tests.support.text_api import find_user, text_pop, text_queued, text_submit

#: The per-process snapshots (a second in production) last the whole test: what is cached stays cached.
CACHED_S = 3600
#: The read of a worker's latest generations for its speed (horde/text/checkin.py).
SPEEDS = "select text_jobs.tokens, text_jobs.started_at, text_jobs.ended_at from text_jobs"


def test_a_text_pop_with_a_key_seen_lately_reads_no_user(client, make_user, runtime):
    _, key = make_user("owner", kudos=100)
    text_pop(client, key)  # the first pop checks the worker in and caches the key's owner
    text_queued(client, key)
    with statements(runtime) as seen:
        job = text_pop(client, key)
    assert job["id"] and job["payload"]
    assert not [statement for statement in seen if "from users" in statement], seen
    assert any(statement.startswith("update text_requests") for statement in seen)


def test_a_workers_speed_is_read_at_most_once_a_second_per_process(client, make_user, runtime):
    """Whether a worker is slow (slow_workers false skips it) is the median of its latest generations: the
    per-process snapshots keep it, so a worker popping again and again does not read its jobs each time."""
    runtime.snapshots = Snapshots(max_age_s=CACHED_S)
    _, key = make_user("owner", kudos=100)
    text_pop(client, key)  # checked in, its speed read once
    with statements(runtime) as seen:
        for _ in range(3):
            text_queued(client, key)
            assert text_pop(client, key)["id"]
    assert not [statement for statement in seen if SPEEDS in statement], seen


def test_a_slow_worker_is_found_slow_once_the_snapshot_is_taken_again(client, make_user, runtime):
    """A request that refuses slow workers is not given to one; the speed read is a second old at most."""
    runtime.snapshots = Snapshots(max_age_s=0)  # every pop reads the speed afresh
    _, key = make_user("owner", kudos=100)
    text_pop(client, key)
    text_queued(client, key)
    job = text_pop(client, key)["id"]
    now = utcnow()
    with runtime.db.transaction() as session:  # a generation of 64 tokens in 1000 s: far below 2 tokens/s
        session.execute(
            update(TextJob)
            .where(TextJob.id == job)
            .values(state=JOB_SUBMITTED, tokens=64, started_at=now - dt.timedelta(seconds=1000), ended_at=now)
        )
    text_queued(client, key, slow_workers=False)
    assert text_pop(client, key)["id"] is None
    text_queued(client, key)  # slow workers welcome: the same worker takes it
    assert text_pop(client, key)["id"]


def test_a_text_submit_moves_the_charge_and_the_reward_in_one_statement_on_postgresql(client, make_user, runtime):
    """The requester's charge and the owner's reward, with their two ledger entries: one round trip."""
    if not runtime.db.is_postgresql:
        pytest.skip("SQLite's transfers are in-process calls, not round trips")
    _, owner = make_user("owner", kudos=100)
    _, requester = make_user("requester", kudos=100)
    text_pop(client, owner)
    text_queued(client, requester)
    job = text_pop(client, owner)["id"]
    with statements(runtime) as seen:
        assert text_submit(client, owner, job, generation=" and then").status_code == 200
    ledger = [statement for statement in seen if "insert into kudos_ledger" in statement]
    assert len(ledger) == 1 and ledger[0].count("update users") == 2, seen
    assert find_user(client, owner)["kudos"] + find_user(client, requester)["kudos"] == 200
    assert find_user(client, owner)["kudos"] > 100
