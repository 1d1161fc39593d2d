"""Graceful shutdown with real processes, under `python -m horde serve` and under gunicorn.

SIGTERM: the process stops accepting; a stream that ends within HORDE_DRAIN_S ends normally; one that
does not ends with `server_shutting_down`, and its request stays on the Horde, so a retry with the same
Idempotency-Key on another process attaches to it and gets the whole reply from the one job.
"""

from __future__ import annotations

import signal
import socket
import uuid

import openai
import pytest
from sqlalchemy import select

from horde.chat.models import ChatJob, ChatRequest
from tests.support.harness import SHARED_DATABASE_SETTINGS, Harness, unique_model, write_rules
from tests.support.processes import GunicornServer, Server, wait_until

pytestmark = pytest.mark.e2e
LONG_REPLY = "A reply that takes its time to arrive, in many small steps."
SHORT_REPLY = "A short reply."
# The worker pops from another server than the one the client calls: without Redis, that server hears of the
# request at its next pop, so the worker's long-polls are short ones.
POP_WAIT = ("--wait", "0.5")


@pytest.fixture
def rules(tmp_path):
    return write_rules(
        tmp_path,
        [
            {
                "match": {"contains": "long"},
                "reply": {"content": LONG_REPLY, "progress_steps": 20, "progress_interval_s": 0.25},
            },
            {
                "match": {"contains": "short"},
                "reply": {"content": SHORT_REPLY, "progress_steps": 4, "progress_interval_s": 0.5},
            },
        ],
    )


def refuses_connections(server) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", server.port), timeout=1):
            return False
    except OSError:
        return True


def latest_request(harness):
    with harness.runtime.db.read() as session:
        return session.scalars(select(ChatRequest).order_by(ChatRequest.created_at.desc()).limit(1)).first()


def wait_processing(harness):
    wait_until(
        lambda: (request := latest_request(harness)) is not None and request.state == "processing",
        what="the request to be taken by the worker",
    )


def interrupted_stream_then_retry(harness, first, second, rules):
    """Stream through `first`, SIGTERM it, retry with the same key on `second`."""
    model = unique_model("drain")
    harness.worker([model], *POP_WAIT, rules=rules, server=second)
    key = harness.user(kudos=100)
    idempotency_key = f"drain-{uuid.uuid4().hex}"
    body = dict(
        model=model,
        messages=[{"role": "user", "content": "Something long, please."}],
        stream=True,
        extra_headers={"Idempotency-Key": idempotency_key},
    )
    stream = harness.openai(key, server=first).chat.completions.create(**body)
    wait_processing(harness)
    first.popen.send_signal(signal.SIGTERM)
    with pytest.raises(openai.APIError) as ended:
        for _ in stream:
            pass
    assert ended.value.code == "server_shutting_down", first.output()
    assert first.popen.wait(60) == 0
    assert refuses_connections(first)

    retried = harness.openai(key, server=second).chat.completions.create(**body)
    chunks = list(retried)
    text = "".join(chunk.choices[0].delta.content or "" for chunk in chunks if chunk.choices)
    assert text == LONG_REPLY
    request = latest_request(harness)
    assert request.state == "done" and request.attempts == 1
    assert chunks[-1].model_extra["x_horde"]["request_id"] == request.id
    with harness.runtime.db.read() as session:
        assert len(session.scalars(select(ChatJob).where(ChatJob.request_id == request.id)).all()) == 1


def test_serve_ends_late_streams_and_a_retry_elsewhere_attaches(e2e_database_url, rules):
    harness = Harness(e2e_database_url, settings={"HORDE_DRAIN_S": 1, **SHARED_DATABASE_SETTINGS}, servers=2)
    try:
        interrupted_stream_then_retry(harness, harness.servers[0], harness.servers[1], rules)
    finally:
        harness.close()


def test_gunicorn_ends_late_streams_and_a_retry_elsewhere_attaches(e2e_database_url, rules):
    harness = Harness(e2e_database_url, settings={"HORDE_DRAIN_S": 1, **SHARED_DATABASE_SETTINGS})
    production = GunicornServer(harness.env)
    harness.servers.append(production)
    try:
        interrupted_stream_then_retry(harness, production, harness.server, rules)
    finally:
        harness.close()


@pytest.mark.parametrize("server_class", [Server, GunicornServer], ids=["serve", "gunicorn"])
def test_a_stream_within_the_drain_ends_normally_and_no_new_connection_is_accepted(tmp_path, rules, server_class):
    """One backend is enough here: nothing of this path differs between them."""
    harness = Harness(f"sqlite:///{tmp_path / 'horde.db'}", settings={"HORDE_DRAIN_S": 60, **SHARED_DATABASE_SETTINGS})
    draining = server_class(harness.env)
    harness.servers.append(draining)
    try:
        model = unique_model("drain")
        harness.worker([model], *POP_WAIT, rules=rules)
        stream = harness.openai(harness.user(kudos=100), server=draining).chat.completions.create(
            model=model, messages=[{"role": "user", "content": "Something short."}], stream=True
        )
        wait_processing(harness)
        draining.popen.send_signal(signal.SIGTERM)
        wait_until(lambda: refuses_connections(draining), what="the draining server to stop accepting")
        text = "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)
        assert text == SHORT_REPLY
        assert draining.popen.wait(60) == 0
    finally:
        harness.close()
