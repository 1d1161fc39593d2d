"""The batch driver on both databases, one pass at a time, with native workers popping and submitting: lines fed a
bounded number at a time, each line queued once and answered once, kudos charged per line as lines end, cancels,
expiry, retried refusals and the lease."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from sqlalchemy import func, select, update

from horde.accounts.models import KudosEntry
from horde.batches.models import Batch, BatchLine, line_request_id
from horde.chat import service as chat_service
from horde.chat import tiers
from horde.chat.models import DONE, WAITING, ChatRequest
from horde.timeutil import utcnow
from tests.support.batches import batch_of, bearer, chat_line, content_lines, driver, retrieve
from tests.support.native import pop, submit
from tests.support.text_api import find_user


@pytest.fixture
def owner(client, make_user):
    _, key = make_user("owner")
    pop(client, key)  # m1 becomes known and served
    return key


def requests_of(runtime, batch_id: str) -> list[ChatRequest]:
    with runtime.db.read() as session:
        total = session.get_one(Batch, batch_id).total
        ids = [line_request_id(batch_id, number) for number in range(1, total + 1)]
        return list(session.scalars(select(ChatRequest).where(ChatRequest.id.in_(ids))))


def serve(client, owner: str, *, limit: int = 100, content: str | None = None) -> int:
    """Pop and submit until no job is left (or `limit` jobs); how many. The reply echoes the prompt by default."""
    served = 0
    while served < limit:
        job = pop(client, owner)
        if job["id"] is None:
            return served
        text = content or "You wrote: " + job["payload"]["messages"][-1]["content"]
        assert submit(client, owner, job["id"], content=text).status_code == 200
        served += 1
    return served


def run_to_end(runtime, client, owner: str, batch_id: str, key: str, passes: int = 50) -> dict:
    drive = driver(runtime)
    for _ in range(passes):
        drive.pass_once()
        serve(client, owner)
        batch = retrieve(client, key, batch_id)
        if batch["status"] in ("completed", "failed", "cancelled", "expired"):
            return batch
    raise AssertionError(f"the batch did not end in {passes} passes: {batch}")


def test_lines_are_fed_a_bounded_number_at_a_time_and_answered_once(runtime, client, owner, make_user):
    runtime.settings = runtime.settings.replace(batch_max_in_flight=3)
    _, key = make_user("requester", kudos=1000)
    batch_id = batch_of(client, key, [chat_line(f"c{n}", f"line {n}") for n in range(10)])
    drive = driver(runtime)
    drive.pass_once()
    assert retrieve(client, key, batch_id)["status"] == "in_progress"
    most_in_flight = 0
    for _ in range(20):
        drive.pass_once()
        live = [request for request in requests_of(runtime, batch_id) if request.state != DONE]
        most_in_flight = max(most_in_flight, len(live))
        assert retrieve(client, key, batch_id)["x_horde"]["in_flight"] <= 3
        serve(client, owner, limit=2)
        if retrieve(client, key, batch_id)["status"] == "completed":
            break
    batch = retrieve(client, key, batch_id)
    assert batch["status"] == "completed" and most_in_flight == 3
    assert batch["request_counts"] == {"total": 10, "completed": 10, "failed": 0}
    outputs = content_lines(client, key, batch["output_file_id"])
    assert [line["custom_id"] for line in outputs] == [f"c{n}" for n in range(10)]
    assert [line["response"]["body"]["choices"][0]["message"]["content"] for line in outputs] == [
        f"You wrote: line {n}" for n in range(10)
    ]
    requests = requests_of(runtime, batch_id)
    assert len(requests) == 10 and {request.service_tier for request in requests} == {tiers.FLEX}
    charged = sum(request.kudos_charged for request in requests)
    assert batch["x_horde"]["kudos"] == charged == 1000 - find_user(client, key)["kudos"]
    assert "error_file_id" not in batch


def test_a_line_queued_before_a_crash_is_found_not_queued_again(runtime, client, owner, make_user):
    """The driver died after a line's admission committed and before the line was marked: the next pass finds the
    request of the line's id, and never makes a second one."""
    user, key = make_user("requester", kudos=1000)
    batch_id = batch_of(client, key, [chat_line("only", "once")])
    drive = driver(runtime)
    drive.pass_once()  # validated
    from horde.accounts.identity import Identity

    native = {"model": "m1", "messages": [{"role": "user", "content": "once"}], "max_tokens": 64}
    chat_service.create(
        runtime, Identity.of(user), native, request_id=line_request_id(batch_id, 1), tier=tiers.BATCH_LINE
    )
    batch = run_to_end(runtime, client, owner, batch_id, key)
    assert batch["request_counts"]["completed"] == 1 and len(requests_of(runtime, batch_id)) == 1
    with runtime.db.read() as session:
        charges = session.scalar(
            select(func.count()).where(KudosEntry.request_id == line_request_id(batch_id, 1), KudosEntry.amount < 0)
        )
    assert charges == 1


def test_lines_are_refused_with_the_kudos_error_once_the_user_runs_out(runtime, client, owner, make_user):
    """Charged per line as lines end: with kudos for a few lines, the rest end in the error file with KudosUpfront."""
    runtime.settings = runtime.settings.replace(batch_max_in_flight=1)
    _, key = make_user("requester", kudos=3)
    batch_id = batch_of(client, key, [chat_line(f"c{n}", "hi", max_tokens=16) for n in range(8)])
    batch = run_to_end(runtime, client, owner, batch_id, key)
    counts = batch["request_counts"]
    assert counts["total"] == 8 and 0 < counts["completed"] < 8 and counts["failed"] == 8 - counts["completed"]
    refused = content_lines(client, key, batch["error_file_id"])
    assert {line["response"]["body"]["error"]["code"] for line in refused} == {"KudosUpfront"}
    assert {line["response"]["status_code"] for line in refused} == {403}
    assert find_user(client, key)["kudos"] >= 0
    assert batch["x_horde"]["kudos"] == 3 - find_user(client, key)["kudos"]


def test_a_cancel_withdraws_what_waits_and_keeps_what_ran(runtime, client, owner, make_user):
    runtime.settings = runtime.settings.replace(batch_max_in_flight=2)
    _, key = make_user("requester", kudos=1000)
    batch_id = batch_of(client, key, [chat_line(f"c{n}", f"line {n}") for n in range(6)])
    drive = driver(runtime)
    drive.pass_once()
    drive.pass_once()  # two lines queued
    running = pop(client, owner)  # one claimed by a worker, one waiting
    cancelled = client.post(f"/v1/batches/{batch_id}/cancel", headers=bearer(key)).json
    assert cancelled["status"] == "cancelling" and "cancelling_at" in cancelled
    again = client.post(f"/v1/batches/{batch_id}/cancel", headers=bearer(key))
    assert again.status_code == 200 and again.json["status"] == "cancelling"  # idempotent
    drive.pass_once()
    assert retrieve(client, key, batch_id)["status"] == "cancelling"  # the running line is still out
    assert submit(client, owner, running["id"], content="finished anyway").status_code == 200
    drive.pass_once()
    batch = retrieve(client, key, batch_id)
    assert batch["status"] == "cancelled" and "cancelled_at" in batch
    assert batch["request_counts"] == {"total": 6, "completed": 1, "failed": 5}
    [output] = content_lines(client, key, batch["output_file_id"])
    assert output["custom_id"] == "c0"
    errors = content_lines(client, key, batch["error_file_id"])
    assert [line["custom_id"] for line in errors] == [f"c{n}" for n in range(1, 6)]
    assert {line["error"]["code"] for line in errors} == {"batch_cancelled"}
    assert all(line["response"] is None for line in errors)
    assert [request.state for request in requests_of(runtime, batch_id)].count(DONE) == 1
    refused = client.post(f"/v1/batches/{batch_id}/cancel", headers=bearer(key))
    assert refused.status_code == 200  # cancelled already: answered as it is
    completed_id = batch_of(client, key, [chat_line("x", "y")])
    run_to_end(runtime, client, owner, completed_id, key)
    late = client.post(f"/v1/batches/{completed_id}/cancel", headers=bearer(key))
    assert (late.status_code, late.json["error"]["code"]) == (409, "batch_not_cancellable")


def test_an_expired_batch_ends_expired_with_what_finished(runtime, client, owner, make_user):
    runtime.settings = runtime.settings.replace(batch_max_in_flight=2)
    _, key = make_user("requester", kudos=1000)
    batch_id = batch_of(client, key, [chat_line(f"c{n}", f"line {n}") for n in range(5)])
    drive = driver(runtime)
    drive.pass_once()
    drive.pass_once()
    serve(client, owner)  # the first two answered
    drive.pass_once()  # collected; two more queued
    with runtime.db.transaction() as session:
        session.execute(update(Batch).where(Batch.id == batch_id).values(expires_at=utcnow() - dt.timedelta(seconds=1)))
    for _ in range(4):
        drive.pass_once()
    batch = retrieve(client, key, batch_id)
    assert batch["status"] == "expired" and "expired_at" in batch
    assert batch["request_counts"] == {"total": 5, "completed": 2, "failed": 3}
    assert [line["custom_id"] for line in content_lines(client, key, batch["output_file_id"])] == ["c0", "c1"]
    errors = content_lines(client, key, batch["error_file_id"])
    assert {line["error"]["code"] for line in errors} == {"batch_expired"}
    waiting = [request for request in requests_of(runtime, batch_id) if request.state == WAITING]
    assert waiting == []


def test_a_line_without_an_online_worker_waits_instead_of_failing(runtime, client, make_user):
    """No worker serves the model now: the line is tried again later (retry_at), not refused."""
    _, owner = make_user("owner")
    pop(client, owner, models=("m2",))
    runtime.settings = runtime.settings.replace(worker_online_window_s=1)
    _, key = make_user("requester", kudos=1000)
    batch_id = batch_of(client, key, [chat_line("late", "hello", model="m2")])
    with runtime.db.transaction() as session:  # the worker went offline long ago
        from horde.workers.models import Worker

        session.execute(update(Worker).values(last_pop_at=utcnow() - dt.timedelta(hours=1)))
    runtime.snapshots.queue_changed()
    drive = driver(runtime)
    drive.pass_once()
    drive.pass_once()
    with runtime.db.read() as session:
        line = session.get_one(BatchLine, (batch_id, 1))
    assert line.state == "queued" and line.retry_at is not None
    assert retrieve(client, key, batch_id)["request_counts"]["failed"] == 0


def test_a_worker_fault_retries_the_line_as_a_request_is_retried(runtime, client, owner, make_user):
    _, key = make_user("requester", kudos=1000)
    batch_id = batch_of(client, key, [chat_line("flaky", "hello")])
    drive = driver(runtime)
    drive.pass_once()
    drive.pass_once()
    job = pop(client, owner)
    faulted = client.post(
        "/api/v2/generate/chat/fault", json={"id": job["id"], "reason": "oops"}, headers={"apikey": owner}
    )
    assert faulted.status_code == 200
    batch = run_to_end(runtime, client, owner, batch_id, key)
    assert batch["request_counts"] == {"total": 1, "completed": 1, "failed": 0}
    [request] = requests_of(runtime, batch_id)
    assert request.attempts == 2


def test_one_driver_at_a_time_holds_a_batch(runtime, client, owner, make_user):
    _, key = make_user("requester", kudos=1000)
    batch_id = batch_of(client, key, [chat_line("a", "hello")])
    first, second = driver(runtime, owner="first"), driver(runtime, owner="second")
    assert first.pass_once() == 1
    assert second.pass_once() == 0  # the first's lease holds
    with runtime.db.transaction() as session:  # the first process died: its lease lapses
        session.execute(update(Batch).values(lease_until=utcnow() - dt.timedelta(seconds=1)))
    assert second.pass_once() == 1
    with runtime.db.read() as session:
        assert session.get_one(Batch, batch_id).lease_owner == "second"
    assert first.pass_once() == 0


def test_a_refused_line_is_an_error_line_and_the_rest_runs(runtime, client, owner, make_user):
    _, key = make_user("requester", kudos=1000)
    lines = [
        chat_line("ok", "hello"),
        chat_line("unknown-model", "hello", model="no/such-model"),
        chat_line("streamed", "hello", stream=True),
        chat_line("bad-temperature", "hello", temperature=9),
    ]
    batch = run_to_end(runtime, client, owner, batch_of(client, key, lines), key)
    assert batch["request_counts"] == {"total": 4, "completed": 1, "failed": 3}
    errors = {line["custom_id"]: line["response"] for line in content_lines(client, key, batch["error_file_id"])}
    assert errors["unknown-model"]["status_code"] == 404
    assert errors["unknown-model"]["body"]["error"]["code"] == "model_not_found"
    assert errors["streamed"]["body"]["error"]["param"] == "stream"
    assert errors["bad-temperature"]["body"]["error"]["param"] == "temperature"
    with runtime.db.read() as session:
        assert session.scalar(select(func.count()).select_from(ChatRequest)) == 1
    assert json.dumps(errors)  # plain JSON all through


def test_a_running_batch_leaves_its_users_concurrency_to_interactive_requests(runtime, client, owner, make_user):
    """Batch lines are bounded by HORDE_BATCH_MAX_IN_FLIGHT, apart from the concurrency a moderator sets: a user whose
    batch keeps more lines in flight than the concurrency still has every place of it for their own chats."""
    runtime.settings = runtime.settings.replace(batch_max_in_flight=4)
    user, key = make_user("requester", kudos=10_000)
    with runtime.db.transaction() as session:
        session.get_one(type(user), user.id).concurrency = 2
    batch_of(client, key, [chat_line(f"c{n}", f"line {n}") for n in range(6)])
    drive = driver(runtime)
    for _ in range(3):
        drive.pass_once()
    assert len([r for r in requests_of_user(runtime, user.id) if r.state == WAITING]) == 4  # the batch's lines
    chat = {"model": "m1", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 16}
    admitted = [client.post("/api/v2/generate/chat/async", json=chat, headers={"apikey": key}) for _ in range(3)]
    assert [answer.status_code for answer in admitted] == [202, 202, 429]
    assert admitted[2].json["metadata"] == {"in_flight": 2, "concurrency": 2}


def requests_of_user(runtime, user_id: int) -> list[ChatRequest]:
    with runtime.db.read() as session:
        return list(session.scalars(select(ChatRequest).where(ChatRequest.user_id == user_id)))
