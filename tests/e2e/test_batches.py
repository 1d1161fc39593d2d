"""The Batch API with the OpenAI SDK against a running Horde and real scripted workers: files.create, files.list,
files.retrieve, files.content, files.delete, batches.create, batches.retrieve, batches.list, batches.cancel."""

from __future__ import annotations

import io
import json
from pathlib import Path

import openai
import pytest

from tests.support.harness import unique_model, write_rules
from tests.support.openapi import validate
from tests.support.processes import wait_until

TEXT_RULES = Path(__file__).with_name("rules_text.json")
BATCH_TIMEOUT_S = 90
FINAL = ("completed", "failed", "expired", "cancelled")


def jsonl(lines: list[dict]) -> bytes:
    return b"".join(json.dumps(line).encode() + b"\n" for line in lines)


def chat_line(custom_id: str, model: str, content: str, **body) -> dict:
    request = {"model": model, "messages": [{"role": "user", "content": content}], "max_tokens": 64, **body}
    return {"custom_id": custom_id, "method": "POST", "url": "/v1/chat/completions", "body": request}


def upload(client: openai.OpenAI, data: bytes, name: str = "batch.jsonl"):
    return client.files.create(file=(name, io.BytesIO(data)), purpose="batch")


def finished(client: openai.OpenAI, batch_id: str, timeout_s: float = BATCH_TIMEOUT_S):
    return wait_until(
        lambda: (batch := client.batches.retrieve(batch_id)).status in FINAL and batch,
        timeout_s=timeout_s,
        what=f"the batch {batch_id} to end",
    )


def lines_of(client: openai.OpenAI, file_id: str | None) -> list[dict]:
    if file_id is None:
        return []
    return [json.loads(line) for line in client.files.content(file_id).text.splitlines()]


@pytest.fixture
def chat_model(horde):
    model = unique_model("batch")
    horde.worker([model], "--threads", "4")
    return model


def test_a_chat_completions_batch_runs_through_the_sdk(horde, chat_model):
    """Lines answered, a line the Horde refuses (an unknown parameter), a line whose worker faults at every attempt:
    each custom_id once, in the output or the error file, in OpenAI's line format; the user charged per line."""
    key = horde.user(kudos=1000)
    client = horde.openai(key)
    good = [chat_line(f"good-{n}", chat_model, f"line {n}") for n in range(6)]
    refused = chat_line("refused", chat_model, "hi", logit_bias={"1": 1})
    faulted = chat_line("faulted", chat_model, "please fail")
    uploaded = upload(client, jsonl([*good[:3], refused, *good[3:], faulted]))
    validate(uploaded.model_dump(exclude_unset=True), "OpenAIFile")
    assert (uploaded.purpose, uploaded.filename) == ("batch", "batch.jsonl")
    assert client.files.retrieve(uploaded.id).bytes == uploaded.bytes

    batch = client.batches.create(
        input_file_id=uploaded.id, endpoint="/v1/chat/completions", completion_window="24h", metadata={"run": "1"}
    )
    validate(batch.model_dump(exclude_unset=True), "Batch")
    assert batch.status == "validating" and batch.metadata == {"run": "1"}
    done = finished(client, batch.id)
    validate(done.model_dump(exclude_unset=True), "Batch")
    assert done.status == "completed"
    assert (done.request_counts.total, done.request_counts.completed, done.request_counts.failed) == (8, 6, 2)

    outputs = lines_of(client, done.output_file_id)
    assert sorted(line["custom_id"] for line in outputs) == sorted(line["custom_id"] for line in good)
    for line in outputs:
        assert line["id"].startswith("batch_req_") and line["error"] is None
        response = line["response"]
        assert response["status_code"] == 200
        validate(response["body"], "CreateChatCompletionResponse")
        number = line["custom_id"].split("-")[1]
        assert response["body"]["choices"][0]["message"]["content"] == f"You wrote: line {number}"
        assert response["body"]["service_tier"] == "flex"
        assert response["request_id"] == response["body"]["x_horde"]["request_id"]
    errors = {line["custom_id"]: line for line in lines_of(client, done.error_file_id)}
    assert set(errors) == {"refused", "faulted"}
    assert errors["refused"]["response"]["status_code"] == 400
    assert errors["refused"]["response"]["body"]["error"]["param"] == "logit_bias"
    assert errors["faulted"]["response"]["status_code"] == 502
    assert errors["faulted"]["response"]["body"]["error"]["code"] == "ChatRequestFaulted"

    charged = sum(line["response"]["body"]["x_horde"]["kudos"] for line in outputs)
    assert done.model_extra["x_horde"]["kudos"] == charged
    assert horde_balance(client) == 1000 - charged
    output_file = client.files.retrieve(done.output_file_id)
    assert output_file.bytes == len(client.files.content(done.output_file_id).content)
    assert output_file.purpose == "batch_output"
    assert done.usage.output_tokens == sum(line["response"]["body"]["usage"]["completion_tokens"] for line in outputs)

    listed = client.batches.list(limit=5)
    assert listed.data[0].id == batch.id
    assert uploaded.id in {file.id for file in client.files.list(purpose="batch")}
    deleted = client.files.delete(uploaded.id)
    assert deleted.deleted and deleted.id == uploaded.id
    with pytest.raises(openai.NotFoundError):
        client.files.retrieve(uploaded.id)


def horde_balance(client: openai.OpenAI) -> float:
    import requests

    base = str(client.base_url).removesuffix("/v1/")
    return requests.get(f"{base}/api/v2/find_user", headers={"apikey": client.api_key}, timeout=10).json()["kudos"]


def test_a_cancel_through_the_sdk_ends_the_batch_cancelled(horde, tmp_path):
    """A worker that takes its time: the cancel withdraws the lines still waiting, the running ones end in the
    output, the lines never run end in the error file with batch_cancelled."""
    model = unique_model("batch-cancel")
    rules = write_rules(tmp_path, [{"match": {}, "reply": {"content": "slowly", "delay_s": 1}}])
    horde.worker([model], "--threads", "1", rules=rules)
    client = horde.openai(horde.user(kudos=1000))
    uploaded = upload(client, jsonl([chat_line(f"c{n}", model, f"line {n}") for n in range(20)]))
    batch = client.batches.create(input_file_id=uploaded.id, endpoint="/v1/chat/completions", completion_window="24h")
    wait_until(lambda: client.batches.retrieve(batch.id).status == "in_progress", what="the batch to start")
    cancelling = client.batches.cancel(batch.id)
    assert cancelling.status == "cancelling"
    done = finished(client, batch.id)
    validate(done.model_dump(exclude_unset=True), "Batch")
    assert done.status == "cancelled" and done.cancelled_at is not None
    counts = done.request_counts
    assert counts.total == 20 and counts.completed + counts.failed == 20 and counts.failed >= 15
    errors = lines_of(client, done.error_file_id)
    assert {line["error"]["code"] for line in errors} == {"batch_cancelled"}
    ran = lines_of(client, done.output_file_id)
    assert {line["custom_id"] for line in ran} | {line["custom_id"] for line in errors} == {f"c{n}" for n in range(20)}
    assert all(line["response"]["body"]["choices"][0]["message"]["content"] == "slowly" for line in ran)


def test_flex_waits_behind_interactive_requests_through_the_sdk(horde):
    """One worker thread, busy: a flex request queued first, then an interactive one; the interactive one is served
    first. Each answer names the tier that served it."""
    from concurrent.futures import ThreadPoolExecutor

    from sqlalchemy import func, select

    from horde.chat.models import ChatJob, ChatRequest, ChatRequestModel

    model = unique_model("flex")
    horde.worker([model], "--threads", "1")
    key = horde.user(kudos=1000)
    client = horde.openai(key)

    def ask(content: str, **extra):
        messages = [{"role": "user", "content": content}]
        return client.chat.completions.create(model=model, messages=messages, max_tokens=64, **extra)

    def count(state: str) -> int:
        with horde.runtime.db.read() as session:
            query = select(func.count()).where(
                ChatRequest.state == state,
                ChatRequest.id.in_(select(ChatRequestModel.request_id).where(ChatRequestModel.model == model)),
            )
            return session.scalar(query) or 0

    with ThreadPoolExecutor(3) as pool:
        busy = pool.submit(ask, "slow down")  # the "slow" rule: 1.2 s of progress
        wait_until(lambda: count("processing") == 1, what="the worker to be busy")
        flex = pool.submit(ask, "the flex one", service_tier="flex")
        wait_until(lambda: count("waiting") == 1, what="the flex request to wait")
        interactive = pool.submit(ask, "the interactive one")
        wait_until(lambda: count("waiting") == 2, what="both to wait")
        answers = busy.result(), flex.result(), interactive.result()
    _, flex_answer, interactive_answer = answers
    assert (flex_answer.service_tier, interactive_answer.service_tier) == ("flex", "default")
    ids = {flex_answer.model_extra["x_horde"]["request_id"]: "flex"}
    ids[interactive_answer.model_extra["x_horde"]["request_id"]] = "int"
    with horde.runtime.db.read() as session:
        jobs = session.execute(
            select(ChatJob.request_id).where(ChatJob.request_id.in_(ids)).order_by(ChatJob.started_at)
        )
        order = [ids[request_id] for (request_id,) in jobs]
    assert order == ["int", "flex"]
