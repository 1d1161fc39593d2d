"""A finish crosses to the process that holds the client's call (decision 0021): two runtimes on one database
and one Redis, as two server processes. The client's call waits in one, the worker pops and submits in the
other. Counted (never timed)."""

from __future__ import annotations

import json
import threading

import pytest

from horde.app import create_app
from horde.chat.finish import MAX_CARRIED_FINISH_BYTES
from horde.config import Settings
from horde.runtime import Runtime
from tests.integration.oai.test_client_path_statements import follow_reads
from tests.support.databases import redis_url
from tests.support.native import pop, submit
from tests.support.processes import wait_until
from tests.support.statements import statements

BODY = {"model": "m1", "messages": [{"role": "user", "content": "Hello"}], "max_tokens": 16}
JOIN_S = 30


@pytest.fixture
def settings(database_url, redis_prefix):
    url = redis_url()
    if not url:
        pytest.skip("two processes' events need HORDE_TEST_REDIS_URL")
    return Settings.from_env({}, database_url=database_url, redis_url=url, redis_prefix=redis_prefix)


@pytest.fixture
def other_process(runtime, settings):
    """The second process's runtime and client; both buses subscribed before the test starts."""
    other = Runtime.build(settings)
    wait_until(lambda: runtime.bus.status() == other.bus.status() == "ok", JOIN_S, "both buses to subscribe")
    yield other, create_app(runtime=other).test_client()
    other.close()


def answered_from_the_other_process(runtime, client, other_client, owner, key, content):
    """The /v1 answer of a call held here whose job the worker pops and submits in the other process, and the
    statements this process sent meanwhile."""
    answers: list = []
    idempotency_key = {"Idempotency-Key": f"across-{len(content)}"}

    def call_v1():
        answer = client.post(
            "/v1/chat/completions", json=BODY, headers={"Authorization": f"Bearer {key}"} | idempotency_key
        )
        answers.append((answer.status_code, answer.get_data(as_text=True)))
        answer.close()

    pop(other_client, owner)  # the worker checks in over there: online for the admission here
    with statements(runtime) as seen:
        call = threading.Thread(target=call_v1)
        call.start()
        job = wait_until(lambda: pop(other_client, owner)["id"], timeout_s=JOIN_S, what="the request's job")
        assert submit(other_client, owner, job, content=content).status_code == 200
        call.join(JOIN_S)
    status, body = answers[0]
    authorization = {"Authorization": f"Bearer {key}"}
    replay = client.post("/v1/chat/completions", json=BODY, headers=authorization | idempotency_key)
    assert replay.headers.get("Idempotent-Replayed") == "true"
    assert status == 200 and replay.json == json.loads(body), "the answer is the one a read of the row gives"
    return json.loads(body), seen


def test_a_finish_from_the_other_process_answers_without_a_read(runtime, client, other_process, make_user):
    _, other_client = other_process
    _, owner = make_user("owner")
    _, key = make_user("client", kudos=100)

    answer, seen = answered_from_the_other_process(runtime, client, other_client, owner, key, "Hi there")

    assert answer["choices"][0]["message"]["content"] == "Hi there"
    assert follow_reads(seen) == 0


def test_a_finish_too_large_to_carry_is_read(runtime, client, other_process, make_user):
    _, other_client = other_process
    _, owner = make_user("owner")
    _, key = make_user("client", kudos=100)
    long_reply = "word " * (MAX_CARRIED_FINISH_BYTES // 5 + 1)

    answer, seen = answered_from_the_other_process(runtime, client, other_client, owner, key, long_reply)

    assert answer["choices"][0]["message"]["content"] == long_reply
    assert follow_reads(seen) == 1
