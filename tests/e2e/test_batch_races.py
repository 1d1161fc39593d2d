"""Races on batches, for real: two server processes on one PostgreSQL database (and Redis when configured), calls of
each round fired at the same moment across both (tests/support/races.py), and the two processes' drivers racing for
the batches' leases.

SQLite's single writer would hide them, so they run on PostgreSQL only.
"""

from __future__ import annotations

import json

import pytest
import requests
from sqlalchemy import func, select

from horde.accounts.models import KudosEntry
from horde.accounts.moves import Kind
from horde.batches.models import Batch, BatchLine, line_request_id
from horde.chat.models import ChatRequest
from tests.support.harness import postgres_servers, unique_model
from tests.support.ledger import assert_balances_match_ledger
from tests.support.processes import wait_until
from tests.support.races import fire_together

ROUNDS = 10
MAX_ACTIVE = 3
#: Creations fired at once by one user, twice the bound of batches not yet ended.
CREATIONS = 2 * MAX_ACTIVE
HTTP_TIMEOUT_S = 30
BATCHES, LINES = MAX_ACTIVE, 20
RUN_TIMEOUT_S = 180


@pytest.fixture(scope="module")
def horde():
    with postgres_servers({"HORDE_BATCH_MAX_ACTIVE": MAX_ACTIVE, "HORDE_BATCH_MAX_IN_FLIGHT": 4}) as harness:
        yield harness


def call(horde, index: int, method: str, path: str, key: str, **options) -> requests.Response:
    server = horde.servers[index % len(horde.servers)]
    headers = {"Authorization": f"Bearer {key}"}
    return requests.request(method, f"{server.url}/v1{path}", headers=headers, timeout=HTTP_TIMEOUT_S, **options)


def upload(horde, key: str, lines: list[dict]) -> str:
    data = b"".join(json.dumps(line).encode() + b"\n" for line in lines)
    answer = call(horde, 0, "POST", "/files", key, data={"purpose": "batch"}, files={"file": ("r.jsonl", data)})
    assert answer.status_code == 200, answer.text
    return answer.json()["id"]


def line(custom_id: str, model: str) -> dict:
    body = {"model": model, "messages": [{"role": "user", "content": custom_id}], "max_tokens": 16}
    return {"custom_id": custom_id, "method": "POST", "url": "/v1/chat/completions", "body": body}


def test_simultaneous_creations_keep_the_bound_and_simultaneous_cancels_agree(horde):
    """Per round: a user's CREATIONS batch creations at once across both servers: exactly MAX_ACTIVE are created, the
    rest 429 batch_limit_exceeded; then each created batch cancelled from both servers at once: every cancel answers
    200 and the batch ends cancelled, once."""
    model = unique_model("batch-race")
    for _ in range(ROUNDS):
        _one_round(horde, model)


def _one_round(horde, model: str) -> None:
    key = horde.user(kudos=100)
    file_id = upload(horde, key, [line("a", model)])
    body = {"input_file_id": file_id, "endpoint": "/v1/chat/completions", "completion_window": "24h"}
    answers = fire_together([lambda n=n: call(horde, n, "POST", "/batches", key, json=body) for n in range(CREATIONS)])
    codes = sorted(answer.status_code for answer in answers)
    assert codes == [200] * MAX_ACTIVE + [429] * (CREATIONS - MAX_ACTIVE), [answer.text for answer in answers]
    created = [answer.json()["id"] for answer in answers if answer.status_code == 200]
    cancels = fire_together(
        [lambda n=n, b=b: call(horde, n, "POST", f"/batches/{b}/cancel", key) for b in created for n in range(2)]
    )
    assert {answer.status_code for answer in cancels} == {200}
    for batch_id in created:
        wait_until(
            lambda b=batch_id: call(horde, 0, "GET", f"/batches/{b}", key).json()["status"] == "cancelled",
            what="the cancelled batch to end",
        )
    with horde.runtime.db.read() as session:
        cancelled = session.scalar(select(func.count()).where(Batch.id.in_(created), Batch.cancelled_at.isnot(None)))
    assert cancelled == MAX_ACTIVE


def test_batches_driven_by_two_processes_answer_each_line_once(horde):
    """Batches created at once on both servers, their leases raced for by both processes' drivers, a worker on each
    server: every line is queued once, answered once and charged once."""
    model = unique_model("batch-drivers")
    for server in horde.servers:
        horde.worker([model], "--threads", "2", server=server)
    key = horde.user(kudos=100_000)
    files = [upload(horde, key, [line(f"b{n}-l{m}", model) for m in range(LINES)]) for n in range(BATCHES)]
    bodies = [{"input_file_id": f, "endpoint": "/v1/chat/completions", "completion_window": "24h"} for f in files]
    answers = fire_together(
        [lambda n=n, b=b: call(horde, n, "POST", "/batches", key, json=b) for n, b in enumerate(bodies)]
    )
    batch_ids = [answer.json()["id"] for answer in answers]
    for batch_id in batch_ids:
        batch = wait_until(
            lambda b=batch_id: (
                (found := call(horde, 1, "GET", f"/batches/{b}", key).json())["status"] == "completed" and found
            ),
            timeout_s=RUN_TIMEOUT_S,
            what="the batch to complete",
        )
        assert batch["request_counts"] == {"total": LINES, "completed": LINES, "failed": 0}
        content = call(horde, 0, "GET", f"/files/{batch['output_file_id']}/content", key).text
        index = batch_ids.index(batch_id)
        custom_ids = sorted(json.loads(text)["custom_id"] for text in content.splitlines())
        assert custom_ids == sorted(f"b{index}-l{m}" for m in range(LINES))
    request_ids = [line_request_id(b, number) for b in batch_ids for number in range(1, LINES + 1)]
    with horde.runtime.db.read() as session:
        assert session.scalar(select(func.count()).where(ChatRequest.id.in_(request_ids))) == BATCHES * LINES
        user_id = session.scalar(select(ChatRequest.user_id).where(ChatRequest.id == request_ids[0]))
        assert session.scalar(select(func.count()).where(ChatRequest.user_id == user_id)) == BATCHES * LINES
        charges = session.execute(
            select(KudosEntry.request_id, func.count())
            .where(KudosEntry.user_id == user_id, KudosEntry.kind == Kind.CHARGE)
            .group_by(KudosEntry.request_id)
        ).all()
        lines_written = session.scalar(
            select(func.count()).select_from(BatchLine).where(BatchLine.batch_id.in_(batch_ids))
        )
    assert sorted(request_id for request_id, _ in charges) == sorted(request_ids)
    assert {count for _, count in charges} == {1}
    assert lines_written == BATCHES * LINES
    assert_balances_match_ledger(horde.runtime.db)
