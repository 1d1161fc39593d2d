"""Exactly once, for real: a batch runs on two server processes sharing PostgreSQL (and Redis when configured); the
process driving it is killed with SIGKILL mid-batch; the other takes the batch over when the lease lapses. Every line
is answered once, in the output file; every line's request was queued once and charged once; the ledger is exact."""

from __future__ import annotations

import io
import json
import signal

import pytest
from sqlalchemy import func, select

from horde.accounts.models import KudosEntry, User
from horde.accounts.moves import Kind
from horde.batches.models import Batch, line_request_id
from horde.chat.models import DONE, ChatRequest
from tests.support.harness import postgres_servers, unique_model, write_rules
from tests.support.ledger import assert_balances_match_ledger
from tests.support.processes import wait_until

LINES = 240
KUDOS = 100_000
#: Lines answered before the kill: the batch is well under way, and well before its end.
KILL_AFTER = 40
#: The lease of the killed process lapses (horde/batches/driver.py LEASE_S) before the other takes over.
RUN_TIMEOUT_S = 180
#: A job the killed process's worker held comes back to the queue this soon.
SETTINGS = {"HORDE_JOB_TTL_S": 5, "HORDE_BATCH_MAX_IN_FLIGHT": 8}


@pytest.fixture(scope="module")
def horde():
    with postgres_servers(SETTINGS) as harness:
        yield harness


def test_a_killed_driver_loses_no_line_and_charges_none_twice(horde, tmp_path):
    model = unique_model("batch-kill")
    rules = write_rules(tmp_path, [{"match": {}, "reply": {"content": "You wrote: {last_user}", "delay_s": 0.05}}])
    for server in horde.servers:  # a worker on each server: the survivor's carries on
        horde.worker([model], "--threads", "3", rules=rules, server=server)
    key = horde.user(kudos=KUDOS)
    client = horde.openai(key, server=horde.servers[0])
    lines = [
        {
            "custom_id": f"line-{n}",
            "method": "POST",
            "url": "/v1/chat/completions",
            "body": {"model": model, "messages": [{"role": "user", "content": f"number {n}"}], "max_tokens": 32},
        }
        for n in range(LINES)
    ]
    data = b"".join(json.dumps(line).encode() + b"\n" for line in lines)
    uploaded = client.files.create(file=("kill.jsonl", io.BytesIO(data)), purpose="batch")
    batch = client.batches.create(input_file_id=uploaded.id, endpoint="/v1/chat/completions", completion_window="24h")

    wait_until(
        lambda: client.batches.retrieve(batch.id).request_counts.completed >= KILL_AFTER,
        timeout_s=RUN_TIMEOUT_S,
        what="the batch to be under way",
    )
    driving = next(server for server in horde.servers if server.popen.pid == _driver_pid(horde, batch.id))
    driving.stop(sig=signal.SIGKILL)
    with horde.runtime.db.read() as session:
        killed_at = session.get_one(Batch, batch.id)
        assert killed_at.in_flight > 0 and killed_at.completed < LINES  # killed with lines out, mid-batch
    survivor = next(server for server in horde.servers if server is not driving)
    wait_until(
        lambda: _driver_pid(horde, batch.id) == survivor.popen.pid,
        timeout_s=RUN_TIMEOUT_S,
        what="the other process to take the batch over",
    )
    client = horde.openai(key, server=survivor)
    done = wait_until(
        lambda: (found := client.batches.retrieve(batch.id)).status in ("completed", "failed") and found,
        timeout_s=RUN_TIMEOUT_S,
        what="the batch to end after the kill",
    )
    assert done.status == "completed"
    assert (done.request_counts.total, done.request_counts.completed, done.request_counts.failed) == (LINES, LINES, 0)
    assert done.error_file_id is None
    assert _driver_pid(horde, batch.id) is None  # released at the end

    outputs = [json.loads(line) for line in client.files.content(done.output_file_id).text.splitlines()]
    assert sorted(line["custom_id"] for line in outputs) == sorted(f"line-{n}" for n in range(LINES))
    for line in outputs:
        number = line["custom_id"].removeprefix("line-")
        assert line["response"]["body"]["choices"][0]["message"]["content"] == f"You wrote: number {number}"

    request_ids = [line_request_id(batch.id, number) for number in range(1, LINES + 1)]
    with horde.runtime.db.read() as session:
        requests = list(session.scalars(select(ChatRequest).where(ChatRequest.id.in_(request_ids))))
        assert len(requests) == LINES and {request.state for request in requests} == {DONE}
        user_id = requests[0].user_id
        assert session.scalar(select(func.count()).where(ChatRequest.user_id == user_id)) == LINES
        charges = session.execute(
            select(KudosEntry.request_id, func.count(), func.sum(KudosEntry.amount))
            .where(KudosEntry.user_id == user_id, KudosEntry.kind == Kind.CHARGE)
            .group_by(KudosEntry.request_id)
        ).all()
    assert sorted(row[0] for row in charges) == sorted(request_ids)  # one charge entry per line's request
    assert all(count == 1 for _, count, _ in charges)
    charged = -sum(amount for _, _, amount in charges)
    assert charged == sum(request.kudos_charged for request in requests) == done.model_extra["x_horde"]["kudos"]
    with horde.runtime.db.read() as session:
        assert session.get_one(User, user_id).kudos == KUDOS - charged
    assert_balances_match_ledger(horde.runtime.db)


def _driver_pid(horde, batch_id: str) -> int | None:
    with horde.runtime.db.read() as session:
        owner = session.get_one(Batch, batch_id).lease_owner
    return None if owner is None else int(owner.split(":")[1])
