"""No duplicate charged jobs: Idempotency-Key, SDK retries, and both across two server processes."""

import contextlib
import threading

import openai
import pytest
import requests

from horde.accounts.models import KudosEntry
from tests.support.harness import Harness, unique_model
from tests.support.requests_by_model import request_ids_for_model


def jobs_for(horde, model):
    return len(request_ids_for_model(horde.runtime.db, model))


def charges_for(horde, model):
    ids = request_ids_for_model(horde.runtime.db, model)
    with horde.runtime.db.read() as session:
        return session.query(KudosEntry).filter(KudosEntry.request_id.in_(ids), KudosEntry.kind == "charge").count()


def post(url, body, key=None, **headers):
    if key:
        headers["Authorization"] = f"Bearer {key}"
    return requests.post(url + "/v1/chat/completions", json=body, headers=headers, timeout=60)


def test_sdk_retry_after_timeout_makes_one_job_and_one_charge(horde):
    model = unique_model()
    horde.worker([model])
    client = horde.openai(horde.user(), max_retries=3, timeout=openai.Timeout(1.0, connect=5.0))
    completion = client.chat.completions.create(model=model, messages=[{"role": "user", "content": "slow please"}])
    assert completion.choices[0].message.content == "A slow answer, in steps."
    assert jobs_for(horde, model) == 1
    assert charges_for(horde, model) == 1


def test_concurrent_duplicates_with_one_key_make_one_job(horde):
    model = unique_model()
    horde.worker([model])
    key = horde.user()
    body = {"model": model, "messages": [{"role": "user", "content": "slow please"}]}
    results = []
    threads = [
        threading.Thread(target=lambda: results.append(post(horde.url, body, key, **{"Idempotency-Key": "k1"})))
        for _ in range(4)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert [r.status_code for r in results] == [200] * 4
    assert len({r.json()["x_horde"]["request_id"] for r in results}) == 1
    assert jobs_for(horde, model) == 1 and charges_for(horde, model) == 1


def test_replay_after_completion_conflict_and_reusable_refused_key(horde):
    model = unique_model()
    horde.worker([model])
    key = horde.user()
    body = {"model": model, "messages": [{"role": "user", "content": "Hi"}]}
    first = post(horde.url, body, key, **{"Idempotency-Key": "order-1"})
    again = post(horde.url, dict(body, stream=False), key, **{"Idempotency-Key": "order-1"})
    assert again.status_code == 200 and again.headers["Idempotent-Replayed"] == "true"
    assert again.json()["x_horde"] == first.json()["x_horde"]
    assert "Idempotent-Replayed" not in first.headers
    streamed = requests.post(
        horde.url + "/v1/chat/completions",
        json=dict(body, stream=True),
        headers={"Authorization": f"Bearer {key}", "Idempotency-Key": "order-1"},
    )
    assert streamed.headers["Idempotent-Replayed"] == "true" and "You wrote: Hi" in streamed.text
    conflict = post(
        horde.url, dict(body, messages=[{"role": "user", "content": "other"}]), key, **{"Idempotency-Key": "order-1"}
    )
    assert conflict.status_code == 409 and conflict.json()["error"]["code"] == "idempotency_conflict"
    other_user = post(
        horde.url,
        dict(body, messages=[{"role": "user", "content": "other"}]),
        horde.user(),
        **{"Idempotency-Key": "order-1"},
    )
    assert other_user.status_code == 200
    refused = post(horde.url, dict(body, temperature=5), key, **{"Idempotency-Key": "order-2"})
    assert refused.status_code == 400
    corrected = post(horde.url, dict(body, temperature=0.5), key, **{"Idempotency-Key": "order-2"})
    assert corrected.status_code == 200
    assert jobs_for(horde, model) == 3


def test_an_error_answers_again_for_its_key(horde):
    model = unique_model()
    horde.worker([model])
    key = horde.user()
    body = {"model": model, "messages": [{"role": "user", "content": "please fail"}]}
    first = post(horde.url, body, key, **{"Idempotency-Key": "fails"})
    again = post(horde.url, body, key, **{"Idempotency-Key": "fails"})
    assert first.status_code == again.status_code == 502
    assert first.json()["error"]["message"] == again.json()["error"]["message"]
    assert jobs_for(horde, model) == 1


def test_bad_key_is_refused(horde):
    response = post(
        horde.url, {"model": "x", "messages": [{"role": "user", "content": "x"}]}, **{"Idempotency-Key": "x" * 256}
    )
    assert response.status_code == 400 and response.json()["error"]["param"] == "Idempotency-Key"


@pytest.fixture
def two_servers(e2e_database_url, redis_settings):
    if not e2e_database_url.startswith("postgresql"):
        pytest.skip("several server processes are the PostgreSQL + Redis path")
    harness = Harness(e2e_database_url, redis_settings, servers=2)
    yield harness
    harness.close()


def test_idempotency_and_sdk_retries_across_two_processes(two_servers):
    horde = two_servers
    model = unique_model()
    horde.worker([model], server=horde.servers[1])
    key = horde.user()
    body = {"model": model, "messages": [{"role": "user", "content": "slow please"}]}
    results = []
    headers = {"Idempotency-Key": "x"}
    threads = [
        threading.Thread(target=lambda s=server: results.append(post(s.url, body, key, **headers)))
        for server in horde.servers
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert [r.status_code for r in results] == [200, 200]
    assert jobs_for(horde, model) == 1
    client = horde.openai(key, server=horde.servers[0], max_retries=3, timeout=openai.Timeout(1.0, connect=5.0))
    retried = client.chat.completions.create(model=model, messages=[{"role": "user", "content": "slow again"}])
    assert retried.choices[0].message.content
    assert jobs_for(horde, model) == 2 and charges_for(horde, model) == 2


def test_stream_relays_progress_posted_to_another_process(two_servers):
    horde = two_servers
    model = unique_model()
    horde.worker([model], server=horde.servers[1])
    client = horde.openai(server=horde.servers[0])
    with client.chat.completions.stream(model=model, messages=[{"role": "user", "content": "slow please"}]) as stream:
        kinds = [event.type for event in stream]
        final = stream.get_final_completion()
    assert kinds.count("content.delta") > 1
    assert final.choices[0].message.content == "A slow answer, in steps."


def test_a_dropped_holder_does_not_cancel_what_another_holder_waits_on(horde):
    """The job (3 s) outlasts the dropped holder's 0.3 s plus the drop grace (1 s): were the holders not counted,
    the drop would cancel it under the patient one."""
    model = unique_model()
    horde.worker([model])
    key = horde.user()
    body = {"model": model, "messages": [{"role": "user", "content": "outlast the drop grace"}]}
    impatient = threading.Thread(target=lambda: _post_and_drop(horde, body, key, "shared"))
    impatient.start()
    patient = post(horde.url, body, key, **{"Idempotency-Key": "shared"})
    impatient.join(30)
    assert patient.status_code == 200
    assert patient.json()["choices"][0]["message"]["content"] == "An answer that outlasts the drop grace."
    assert jobs_for(horde, model) == 1


def test_keepalive_comments_while_waiting(horde):
    model = unique_model()
    horde.worker([model])
    key = horde.user()
    response = requests.post(
        horde.url + "/v1/chat/completions",
        stream=True,
        timeout=60,
        headers={"Authorization": f"Bearer {key}"},
        json={"model": model, "stream": True, "messages": [{"role": "user", "content": "slow please"}]},
    )
    lines = [line for line in response.iter_lines(decode_unicode=True) if line]
    assert lines[0].startswith(": horde queue_position=")  # the opening comment sends the headers at once
    comments = [line for line in lines if line.startswith(":")]
    assert len(comments) >= 2
    assert "wait_time=" in comments[0]


def _post_and_drop(horde, body, key, idempotency_key):
    with contextlib.suppress(requests.Timeout):
        requests.post(
            horde.url + "/v1/chat/completions",
            json=body,
            timeout=0.3,
            headers={"Authorization": f"Bearer {key}", "Idempotency-Key": idempotency_key},
        )


def test_a_streamed_retry_joins_the_running_stream(horde):
    model = unique_model()
    horde.worker([model])
    key = horde.user()
    body = {"model": model, "stream": True, "messages": [{"role": "user", "content": "slow please"}]}
    headers = {"Authorization": f"Bearer {key}", "Idempotency-Key": "joined"}
    first = requests.post(horde.url + "/v1/chat/completions", json=body, headers=headers, stream=True, timeout=60)
    first_lines = first.iter_lines(decode_unicode=True)
    for line in first_lines:  # wait until the first stream has received some live text
        if '"content"' in line:
            break
    second = requests.post(horde.url + "/v1/chat/completions", json=body, headers=headers, timeout=60)
    rest_of_first = "\n".join(first_lines)
    assert "[DONE]" in rest_of_first

    def text(raw):
        import json as _json

        parts = []
        for line in raw.splitlines():
            if line.startswith("data: {"):
                chunk = _json.loads(line[6:])
                if chunk.get("choices"):
                    parts.append(chunk["choices"][0]["delta"].get("content") or "")
        return "".join(parts)

    assert text(second.text) == "A slow answer, in steps."
    assert jobs_for(horde, model) == 1
