"""Background responses through the app (POST /v1/responses background, GET, cancel, resumed streams, DELETE)."""

import datetime as dt
import json
import threading

import pytest
from sqlalchemy import func, select

from horde.background import records
from horde.background.models import BackgroundRequest, ProgressEntry
from horde.chat import pricing
from horde.chat.models import CANCELLED, ChatRequest
from horde.timeutil import utcnow
from tests.support.native import pop, submit
from tests.support.openapi import validate

#: A model the reference prices at 72B: a charge of a few hundred characters is well above the 1-kudos floor.
BIG_MODEL = "aphrodite/Qwen/Qwen2.5-72B-Instruct"
REPLY = "The answer, in full: " + "every word of it, " * 40
BODY = {"model": BIG_MODEL, "input": "Tell me everything", "background": True}


@pytest.fixture
def owner_key(make_user):
    return make_user("owner")[1]


@pytest.fixture
def key(make_user):
    return make_user("client", kudos=10_000)[1]


def auth(key, **extra):
    return {"Authorization": f"Bearer {key}", **extra}


def create(client, key, body=BODY, **headers):
    answer = client.post("/v1/responses", json=body, headers=auth(key, **headers))
    assert answer.status_code == 200, answer.json
    answer.close()  # the answer went out
    return answer.json


def get(client, key, response_id, query=""):
    return client.get(f"/v1/responses/{response_id}{query}", headers=auth(key))


def stream_events(client, key, response_id, query="?stream=true"):
    """The (sequence number, payload) of each event of a finished response's stream."""
    answer = client.get(f"/v1/responses/{response_id}{query}", headers=auth(key), buffered=False)
    assert answer.status_code == 200, answer.get_data()
    events = []
    for block in b"".join(answer.response).decode().split("\n\n"):
        data = [line[len("data: ") :] for line in block.split("\n") if line.startswith("data: ")]
        if data:
            payload = json.loads(data[0])
            events.append((payload["sequence_number"], payload))
    answer.close()
    return events


def progress(client, owner_key, job_id, content):
    answer = client.post(
        "/api/v2/generate/chat/progress", json={"id": job_id, "content": content}, headers={"apikey": owner_key}
    )
    assert answer.status_code == 200, answer.json
    return answer.json["cancel"]


def chat_request(runtime, request_id) -> ChatRequest:
    with runtime.db.read() as session:
        return session.get_one(ChatRequest, request_id)


def test_queued_then_in_progress_then_completed_and_stored(client, runtime, owner_key, key):
    pop(client, owner_key, models=[BIG_MODEL])
    queued = create(client, key)
    validate(queued, "Response")
    assert queued["status"] == "queued" and queued["background"] is True and queued["output"] == []
    job = pop(client, owner_key, models=[BIG_MODEL])["id"]
    assert get(client, key, queued["id"]).json["status"] == "in_progress"
    assert submit(client, owner_key, job, content=REPLY).status_code == 200
    done = get(client, key, queued["id"]).json
    validate(done, "Response")
    assert done["status"] == "completed" and done["output"][0]["content"][0]["text"] == REPLY
    assert done["background"] is True and done["usage"]["output_tokens"] > 0
    assert get(client, key, queued["id"]).json == done  # kept as a stored response from then on
    follow_up = create(client, key, dict(BODY, input="And then?", previous_response_id=done["id"]))
    assert follow_up["previous_response_id"] == done["id"]  # the conversation continues from it


def test_a_cancel_charges_the_text_generated_so_far_and_is_idempotent(client, runtime, owner_key, key):
    pop(client, owner_key, models=[BIG_MODEL])
    queued = create(client, key)
    job = pop(client, owner_key, models=[BIG_MODEL])["id"]
    generated = REPLY[:400]
    assert not progress(client, owner_key, job, generated)
    first = client.post(f"/v1/responses/{queued['id']}/cancel", headers=auth(key))
    assert first.status_code == 200, first.json
    validate(first.json, "Response")
    assert first.json["status"] == "cancelled"
    assert first.json["output"][0]["content"][0]["text"] == generated  # what the cancel charges for
    second = client.post(f"/v1/responses/{queued['id']}/cancel", headers=auth(key))
    assert second.json == first.json and get(client, key, queued["id"]).json == first.json
    request = chat_request(runtime, first.json["x_horde"]["request_id"])
    expected = pricing.price(BIG_MODEL, completion_tokens=len(generated) // 4, prompt_tokens=request.prompt_tokens)
    full = pricing.price(BIG_MODEL, completion_tokens=len(REPLY) // 4, prompt_tokens=request.prompt_tokens)
    assert request.kudos_charged == first.json["x_horde"]["kudos"] == expected < full
    assert progress(client, owner_key, job, REPLY)  # the worker is told to stop
    assert submit(client, owner_key, job, content=REPLY).status_code != 200  # and its reply is not paid


def test_a_queued_cancel_charges_nothing(client, runtime, owner_key, key):
    pop(client, owner_key, models=[BIG_MODEL])
    queued = create(client, key)
    cancelled = client.post(f"/v1/responses/{queued['id']}/cancel", headers=auth(key)).json
    assert cancelled["status"] == "cancelled" and cancelled["output"] == [] and cancelled["x_horde"]["kudos"] == 0


def test_refusals(client, runtime, owner_key, key, make_user):
    pop(client, owner_key, models=[BIG_MODEL])
    no_store = client.post("/v1/responses", json=dict(BODY, store=False), headers=auth(key))
    assert no_store.status_code == 400 and no_store.json["error"]["param"] == "background", no_store.json
    assert no_store.json["error"]["message"] == "background can only be used when `store` is true"
    not_boolean = client.post("/v1/responses", json=dict(BODY, background="yes"), headers=auth(key))
    assert not_boolean.status_code == 400 and not_boolean.json["error"]["param"] == "background"
    job_answer = {}

    def serve():
        job = pop(client.application.test_client(), owner_key, models=[BIG_MODEL], wait=5)
        job_answer["status"] = submit(client.application.test_client(), owner_key, job["id"]).status_code

    worker = threading.Thread(target=serve)
    worker.start()
    synchronous = client.post("/v1/responses", json=dict(BODY, background=False), headers=auth(key)).json
    worker.join()
    refused = client.post(f"/v1/responses/{synchronous['id']}/cancel", headers=auth(key))
    assert refused.status_code == 400 and refused.json["error"]["message"] == "Cannot cancel a synchronous response."
    assert refused.json["error"]["type"] == "invalid_request_error"
    unstreamable = get(client, key, synchronous["id"], "?stream=true")
    assert unstreamable.status_code == 400 and unstreamable.json["error"]["code"] == "response_not_background"
    unknown = client.post("/v1/responses/resp_nothing/cancel", headers=auth(key))
    assert unknown.status_code == 404 and unknown.json["error"]["code"] == "response_not_found"
    queued = create(client, key)
    for query, param in (("?stream=maybe", "stream"), ("?stream=true&starting_after=x", "starting_after")):
        bad = get(client, key, queued["id"], query)
        assert bad.status_code == 400 and bad.json["error"]["param"] == param, bad.json
    in_progress = client.post(
        "/v1/responses",
        json={"model": BIG_MODEL, "input": "Go on", "previous_response_id": queued["id"]},
        headers=auth(key),
    )
    assert in_progress.status_code == 400 and in_progress.json["error"]["code"] == "response_in_progress"
    other = client.post(f"/v1/responses/{queued['id']}/cancel", headers=auth(make_user("someone-else")[1]))
    assert other.status_code == 404  # another user's background response is not found


def test_a_retry_joins_the_request(client, runtime, owner_key, key):
    pop(client, owner_key, models=[BIG_MODEL])
    first = create(client, key, **{"Idempotency-Key": "nightly-7"})
    again = create(client, key, **{"Idempotency-Key": "nightly-7"})
    body = dict(BODY, input="Another question")
    sdk = create(client, key, body)
    sdk_retry = create(client, key, body, **{"x-stainless-retry-count": "1"})  # its answer was lost: same body
    assert again["id"] == first["id"] and sdk_retry["id"] != sdk["id"]  # the first answer went out: a new request
    with runtime.db.read() as session:
        assert session.scalar(select(func.count()).select_from(ChatRequest)) == 3


def test_a_resumed_stream_gives_the_events_after_n(client, runtime, owner_key, key):
    pop(client, owner_key, models=[BIG_MODEL])
    answer = client.post("/v1/responses", json=dict(BODY, stream=True), headers=auth(key), buffered=False)
    request_id = answer.headers["x-request-id"]
    answer.close()  # the client went away: the request goes on
    job = pop(client, owner_key, models=[BIG_MODEL])["id"]
    for end in (60, 200, 500):
        assert not progress(client, owner_key, job, REPLY[:end])
    assert submit(client, owner_key, job, content=REPLY).status_code == 200
    response_id = "resp_" + request_id.replace("-", "")
    every = stream_events(client, key, response_id)
    numbers = [number for number, _ in every]
    assert numbers == list(range(len(every)))
    kinds = [payload["type"] for _, payload in every]
    assert kinds[:3] == ["response.created", "response.queued", "response.in_progress"]
    assert kinds[-1] == "response.completed"
    for _, payload in every:
        validate(payload, "ResponseStreamEvent")
    deltas = "".join(payload["delta"] for _, payload in every if payload["type"] == "response.output_text.delta")
    assert deltas == REPLY
    assert kinds.count("response.output_text.delta") > 3  # the progress posts' deltas, not the reply whole
    assert every[-1][1]["response"] == get(client, key, response_id).json  # the stored response is its last event's
    for after in (0, 5, len(every) - 2, len(every) + 3):
        assert stream_events(client, key, response_id, f"?stream=true&starting_after={after}") == every[after + 1 :]


def test_a_delete_cancels_and_forgets(client, runtime, owner_key, key):
    pop(client, owner_key, models=[BIG_MODEL])
    answer = client.post("/v1/responses", json=BODY, headers=auth(key))
    deleted = client.delete(f"/v1/responses/{answer.json['id']}", headers=auth(key))
    assert deleted.status_code == 200 and deleted.json["deleted"] is True
    assert get(client, key, answer.json["id"]).status_code == 404
    assert chat_request(runtime, answer.headers["x-request-id"]).state == CANCELLED
    assert client.delete(f"/v1/responses/{answer.json['id']}", headers=auth(key)).status_code == 404


def test_kept_until_the_retention_ends(client, runtime, owner_key, key, monkeypatch):
    pop(client, owner_key, models=[BIG_MODEL])
    answer = client.post("/v1/responses", json=dict(BODY, stream=True), headers=auth(key), buffered=False)
    answer.close()
    job = pop(client, owner_key, models=[BIG_MODEL])["id"]
    assert not progress(client, owner_key, job, REPLY[:50])
    assert records.purge_expired(runtime) == 0
    later = utcnow() + dt.timedelta(seconds=runtime.settings.responses_retention_s + 1)
    monkeypatch.setattr(records, "utcnow", lambda: later)
    assert records.purge_expired(runtime) == 1
    with runtime.db.read() as session:
        assert session.scalar(select(func.count()).select_from(BackgroundRequest)) == 0
        assert session.scalar(select(func.count()).select_from(ProgressEntry)) == 0
