"""/v1/batches on both databases: the create's screening, the input file's validation (refused with each line's
number), paging, owners, and the other two endpoints (/v1/responses, /v1/completions) answered as they answer."""

from __future__ import annotations

import json

import pytest

from horde.batches.validation import MAX_VALIDATION_ERRORS
from tests.support.batches import (
    batch_of,
    bearer,
    chat_line,
    content_lines,
    create,
    driver,
    jsonl,
    retrieve,
    uploaded_id,
)
from tests.support.native import pop, submit
from tests.support.openapi import validate
from tests.support.text_api import text_pop, text_submit


@pytest.fixture
def key(make_user):
    return make_user(kudos=1000)[1]


def failed_errors(runtime, client, key: str, data: bytes) -> list[dict]:
    """The errors of a batch of `data`, which its validation fails."""
    batch_id = create(client, key, uploaded_id(client, key, data)).json["id"]
    driver(runtime).pass_once()
    batch = retrieve(client, key, batch_id)
    validate(batch, "Batch")
    assert batch["status"] == "failed" and "failed_at" in batch
    assert batch["request_counts"]["total"] == 0
    return batch["errors"]["data"]


def test_a_file_that_is_not_jsonl_fails_with_each_line_named(runtime, client, key):
    good = json.dumps(chat_line("a")).encode()
    data = b"\n".join(
        [
            good,
            b"not json at all",
            b"[1, 2]",
            json.dumps({**chat_line("b"), "method": "GET"}).encode(),
            json.dumps({**chat_line("c"), "url": "/v1/completions"}).encode(),
            json.dumps({**chat_line("d"), "body": "text"}).encode(),
            json.dumps({**chat_line("e"), "extra": 1}).encode(),
            json.dumps(chat_line("a")).encode(),
            b"",
            json.dumps({**chat_line("f"), "custom_id": ""}).encode(),
        ]
    )
    errors = failed_errors(runtime, client, key, data)
    found = [(error["line"], error["code"], error["param"]) for error in errors]
    assert found == [
        (2, "invalid_json_line", None),
        (3, "invalid_json_line", None),
        (4, "invalid_request_line", "method"),
        (5, "mismatched_endpoint", "url"),
        (6, "invalid_request_line", "body"),
        (7, "invalid_request_line", "extra"),
        (8, "duplicate_custom_id", "custom_id"),
        (10, "invalid_request_line", "custom_id"),
    ]


def test_a_line_over_the_body_limit_is_refused(runtime, client, key):
    runtime.settings = runtime.settings.replace(max_body_bytes=2048)
    long_line = json.dumps(chat_line("long", "x" * 4096)).encode()
    errors = failed_errors(runtime, client, key, jsonl([chat_line("a")]) + long_line + b"\n")
    assert [(error["line"], error["code"]) for error in errors] == [(2, "line_too_large")]


def test_more_requests_than_the_limit_are_refused(runtime, client, key):
    runtime.settings = runtime.settings.replace(batch_max_requests=3)
    errors = failed_errors(runtime, client, key, jsonl([chat_line(f"c{n}") for n in range(4)]))
    assert [(error["line"], error["code"]) for error in errors] == [(4, "too_many_requests")]


def test_an_empty_file_is_refused(runtime, client, key):
    errors = failed_errors(runtime, client, key, b"\n\n")
    assert [error["code"] for error in errors] == ["empty_file"]


def test_the_errors_listed_are_bounded(runtime, client, key):
    errors = failed_errors(runtime, client, key, b"x\n" * (MAX_VALIDATION_ERRORS + 50))
    assert len(errors) == MAX_VALIDATION_ERRORS


@pytest.mark.parametrize(
    "body,param",
    [
        ({"endpoint": "/v1/embeddings"}, "endpoint"),
        ({"completion_window": "1h"}, "completion_window"),
        ({"metadata": {"k": 1}}, "metadata.k"),
        ({"colour": "blue"}, "colour"),
        ({"input_file_id": None}, "input_file_id"),
        ({"output_expires_after": {"anchor": "now", "seconds": 3600}}, "output_expires_after.anchor"),
        ({"output_expires_after": {"anchor": "created_at", "seconds": 60}}, "output_expires_after.seconds"),
    ],
)
def test_the_create_is_screened(client, key, body, param):
    file_id = uploaded_id(client, key, jsonl([chat_line("a")]))
    answer = create(client, key, file_id, **body)
    assert answer.status_code == 400 and answer.json["error"]["param"] == param


def test_the_input_file_is_the_users_own(client, key, make_user):
    file_id = uploaded_id(client, key, jsonl([chat_line("a")]))
    answer = create(client, make_user()[1], file_id)
    assert (answer.status_code, answer.json["error"]["code"], answer.json["error"]["param"]) == (
        404,
        "file_not_found",
        "input_file_id",
    )


def test_a_user_runs_a_bounded_number_of_batches(runtime, client, key):
    runtime.settings = runtime.settings.replace(batch_max_active=2)
    file_id = uploaded_id(client, key, jsonl([chat_line("a")]))
    assert create(client, key, file_id).status_code == 200
    assert create(client, key, file_id).status_code == 200
    third = create(client, key, file_id)
    assert (third.status_code, third.json["error"]["code"]) == (429, "batch_limit_exceeded")


def test_an_input_file_a_batch_reads_cannot_be_deleted(client, key):
    file_id = uploaded_id(client, key, jsonl([chat_line("a")]))
    batch_id = create(client, key, file_id).json["id"]
    answer = client.delete(f"/v1/files/{file_id}", headers=bearer(key))
    assert (answer.status_code, answer.json["error"]["code"]) == (409, "file_in_use")
    client.post(f"/v1/batches/{batch_id}/cancel", headers=bearer(key))


def test_batches_are_listed_newest_first_and_their_owners_alone(client, key, make_user):
    file_id = uploaded_id(client, key, jsonl([chat_line("a")]))
    ids = [create(client, key, file_id, metadata={"n": str(n)}).json["id"] for n in range(3)]
    page = client.get("/v1/batches?limit=2", headers=bearer(key)).json
    validate(page, "ListBatchesResponse")
    assert [batch["id"] for batch in page["data"]] == ids[::-1][:2] and page["has_more"]
    rest = client.get(f"/v1/batches?after={page['last_id']}", headers=bearer(key)).json
    assert [batch["id"] for batch in rest["data"]] == ids[:1] and not rest["has_more"]
    other = make_user()[1]
    assert client.get("/v1/batches", headers=bearer(other)).json["data"] == []
    missing = client.get(f"/v1/batches/{ids[0]}", headers=bearer(other))
    assert (missing.status_code, missing.json["error"]["code"]) == (404, "batch_not_found")
    assert client.post(f"/v1/batches/{ids[0]}/cancel", headers=bearer(other)).status_code == 404
    assert client.get("/v1/batches?limit=101", headers=bearer(key)).status_code == 400


def one_line_answered(runtime, client, key: str, batch_id: str, serve) -> tuple[dict, dict]:
    """A batch of one line run to its end, `serve` answering the line's job: the batch, and the line's body."""
    drive = driver(runtime)
    drive.pass_once()
    drive.pass_once()
    assert serve().status_code == 200
    drive.pass_once()
    batch = retrieve(client, key, batch_id)
    assert batch["status"] == "completed"
    [output] = content_lines(client, key, batch["output_file_id"])
    return batch, output["response"]["body"]


def test_a_responses_batch_answers_response_objects(runtime, client, key, make_user):
    _, owner = make_user("owner")
    pop(client, owner)
    line = {
        "custom_id": "r1",
        "method": "POST",
        "url": "/v1/responses",
        "body": {"model": "m1", "input": "hello there", "max_output_tokens": 64, "service_tier": "flex"},
    }
    batch_id = batch_of(client, key, [line], endpoint="/v1/responses")
    serve = lambda: submit(client, owner, pop(client, owner)["id"], content="General Kenobi")  # noqa: E731
    _, body = one_line_answered(runtime, client, key, batch_id, serve)
    assert (body["object"], body["status"], body["service_tier"]) == ("response", "completed", "flex")
    assert body["output"][-1]["content"][0]["text"] == "General Kenobi"
    stored = client.get(f"/v1/responses/{body['id']}", headers=bearer(key))
    assert stored.status_code == 200  # stored, as a response with store on (the default) is


def test_a_completions_batch_answers_text_completions(runtime, client, key, make_user):
    _, owner = make_user("owner")
    text_pop(client, owner, models=("t1",))
    line = {
        "custom_id": "t1",
        "method": "POST",
        "url": "/v1/completions",
        "body": {"model": "t1", "prompt": "Once upon a time", "max_tokens": 32},
    }
    batch_id = batch_of(client, key, [line], endpoint="/v1/completions")
    job = lambda: text_pop(client, owner, models=("t1",))["id"]  # noqa: E731
    serve = lambda: text_submit(client, owner, job(), generation="there was a Horde.")  # noqa: E731
    batch, body = one_line_answered(runtime, client, key, batch_id, serve)
    validate(body, "CreateCompletionResponse")
    assert body["choices"][0]["text"] == "there was a Horde."
    assert batch["usage"]["output_tokens"] == body["usage"]["completion_tokens"] > 0


def test_expired_files_and_ended_batches_are_purged_but_a_running_batchs_input(runtime, client, key, make_user):
    """Past the retention, files go (with their chunks) unless a batch not yet ended reads one, and ended batches go
    with their lines."""
    import datetime as dt

    from sqlalchemy import func, select, update

    from horde.batches import retention
    from horde.batches import service as batches
    from horde.batches.models import Batch, BatchLine
    from horde.files import service as files
    from horde.files.models import FileChunk, StoredFile
    from horde.timeutil import utcnow

    _, owner = make_user("owner")
    pop(client, owner)
    idle = uploaded_id(client, key, jsonl([chat_line("a")]))
    ended_id = batch_of(client, key, [chat_line("b", "hello")])
    running_id = batch_of(client, key, [chat_line("c", "hello")])
    drive = driver(runtime)
    for _ in range(3):
        drive.pass_once()
        job = pop(client, owner)
        if job["id"] is not None:
            submit(client, owner, job["id"])
    client.post(f"/v1/batches/{running_id}/cancel", headers=bearer(key))  # ended too: cancelled
    running_id = batch_of(client, key, [chat_line("d", "hello")])  # not ended: reads its input
    drive.pass_once()  # the cancel's wind-down; the last one validated
    past = utcnow() - dt.timedelta(seconds=runtime.settings.files_retention_s + 1)
    with runtime.db.transaction() as session:
        session.execute(update(StoredFile).values(expires_at=utcnow() - dt.timedelta(seconds=1)))
        session.execute(update(Batch).where(Batch.id != running_id).values(completed_at=past, cancelled_at=past))
    dropped = files.purge_expired(runtime, in_use=lambda file_id: batches.reads(runtime, file_id))
    running_input = retrieve(client, key, running_id)["input_file_id"]
    with runtime.db.read() as session:
        kept = set(session.scalars(select(StoredFile.id)))
        chunks = set(session.scalars(select(FileChunk.file_id)))
    assert kept == {running_input} == chunks and dropped >= 3 and idle not in kept
    assert retention.purge_ended(runtime) == 2
    with runtime.db.read() as session:
        assert set(session.scalars(select(Batch.id))) == {running_id}
        assert session.scalar(select(func.count()).select_from(BatchLine).where(BatchLine.batch_id == ended_id)) == 0


def test_output_expires_after_sets_the_output_files_expiry(runtime, client, key, make_user):
    _, owner = make_user("owner")
    pop(client, owner)
    file_id = uploaded_id(client, key, jsonl([chat_line("a", "hello")]))
    expiry = {"anchor": "created_at", "seconds": 7200}
    batch_id = create(client, key, file_id, output_expires_after=expiry).json["id"]
    serve = lambda: submit(client, owner, pop(client, owner)["id"])  # noqa: E731
    batch, _ = one_line_answered(runtime, client, key, batch_id, serve)
    output = client.get(f"/v1/files/{batch['output_file_id']}", headers=bearer(key)).json
    assert output["expires_at"] - output["created_at"] == 7200
