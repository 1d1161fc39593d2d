"""Idempotency keys live in the database and expire with the retention window."""

import datetime as dt
import threading

import pytest

from horde.oai import idempotency
from horde.oai.idempotency_models import IdempotencyKey
from horde.timeutil import utcnow
from tests.support.native import pop, submit

#: Far longer than the first call takes under load: the test moves the clock past it instead of waiting.
RETENTION_S = 60
BODY = {"model": "m1", "messages": [{"role": "user", "content": "Hello"}]}


@pytest.fixture
def settings(settings):
    return settings.replace(idempotency_retention_s=RETENTION_S)


def serve(client, key, jobs):
    for _ in range(jobs):
        job = pop(client, key, wait=5)
        if job["id"]:
            submit(client, key, job["id"])


def chat(client, body, key):
    return client.post(
        "/v1/chat/completions", json=body, headers={"Authorization": f"Bearer {key}", "Idempotency-Key": "order-7"}
    )


def test_a_key_expires_with_the_retention_window(client, make_user, runtime, monkeypatch):
    _, owner = make_user("owner")
    _, key = make_user("client")
    pop(client, owner)
    worker = threading.Thread(target=serve, args=(client.application.test_client(), owner, 2))
    worker.start()
    first = chat(client, BODY, key)
    assert first.status_code == 200
    other = dict(BODY, messages=[{"role": "user", "content": "Another question"}])
    assert chat(client, other, key).status_code == 409
    assert idempotency.purge_expired(runtime) == 0  # within the window
    past_the_window = dt.timedelta(seconds=RETENTION_S + 1)
    monkeypatch.setattr(idempotency, "utcnow", lambda: utcnow() + past_the_window)
    assert idempotency.purge_expired(runtime) == 1
    second = chat(client, other, key)
    worker.join(10)
    assert second.status_code == 200
    assert second.json["x_horde"]["request_id"] != first.json["x_horde"]["request_id"]
    with runtime.db.read() as session:
        assert session.query(IdempotencyKey).count() == 1
