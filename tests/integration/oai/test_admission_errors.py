"""The front's refusals at admission and while waiting: status, code, param, headers, nothing queued."""

import datetime as dt
import random
import threading
import time

import pytest
from sqlalchemy import func, select, update

from horde.chat.models import ChatRequest
from horde.timeutil import utcnow
from horde.workers.models import Worker
from tests.support.native import pop, queue, submit

BODY = {"model": "m1", "messages": [{"role": "user", "content": "Hello"}]}
TOOLS = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]


def chat(client, body=None, key=None, **headers):
    if key:
        headers["Authorization"] = f"Bearer {key}"
    return client.post("/v1/chat/completions", json=body or BODY, headers=headers)


def queued(runtime):
    """The requests queued: read without a write transaction, so that polling it never holds SQLite's writer lock."""
    with runtime.db.read() as session:
        return session.execute(select(func.count()).select_from(ChatRequest)).scalar_one()


@pytest.fixture
def worker_key(client, make_user):
    _, key = make_user("owner")
    pop(client, key, max_length=8192, max_context_length=16384, threads=1)
    return key


def test_kudos_upfront_for_a_key_without_kudos(client, worker_key, runtime):
    response = chat(client, dict(BODY, max_tokens=8000))
    assert response.status_code == 403
    error = response.json["error"]
    assert (error["code"], error["param"], error["type"]) == ("KudosUpfront", "max_tokens", "permission_error")
    assert "x-should-retry" not in response.headers
    assert queued(runtime) == 0


def test_max_kudos_exceeded_reports_both_values(client, worker_key, runtime):
    response = chat(client, dict(BODY, max_tokens=1000, horde={"max_kudos": 1}))
    assert response.status_code == 400
    error = response.json["error"]
    assert error["code"] == "max_kudos_exceeded"
    assert error["metadata"]["max_kudos"] == 1 and error["metadata"]["kudos_estimate"] > 1
    assert queued(runtime) == 0


def test_missing_features_are_listed(client, worker_key, runtime):
    response = chat(client, dict(BODY, tools=TOOLS, seed=3))
    assert response.status_code == 404
    error = response.json["error"]
    assert error["code"] == "no_worker_supports_features"
    assert "tools" in error["message"] and "seed" in error["message"]
    assert set(error["metadata"]["missing"]) == {"tools", "seed"}
    assert queued(runtime) == 0


def test_queue_unavailable_in_fail_fast_and_wait_mode(client, worker_key, runtime):
    # The waiter checks the budget on its keepalive cadence (5 s by default): a quarter second here.
    runtime.settings = runtime.settings.replace(oai_wait_budget_s=1, oai_keepalive_s=0.25)
    response = chat(client)
    assert response.status_code == 503
    error = response.json["error"]
    assert error["code"] == "queue_unavailable"
    assert {"eligible_threads", "wait_time", "budget_s"} <= set(error["metadata"])
    assert int(response.headers["Retry-After"]) >= 1
    assert queued(runtime) == 0
    waited = chat(client, dict(BODY, horde={"availability_mode": "wait"}))
    assert waited.status_code == 503 and waited.json["error"]["code"] == "queue_unavailable"
    assert waited.headers["x-should-retry"] == "false"
    with runtime.db.transaction() as session:
        assert session.query(ChatRequest).one().state == "cancelled"


def test_rate_limit(client, worker_key, runtime, make_user):
    runtime.settings = runtime.settings.replace(rate_limit_per_minute=1)
    _, key = make_user("busy", kudos=10)
    assert queue(client, key).status_code == 202  # the only request of this minute
    response = chat(client, key=key)
    assert response.status_code == 429
    assert response.json["error"]["code"] == "rate_limit_exceeded"
    assert response.headers["Retry-After"] == "60" and response.headers["X-RateLimit-Limit"] == "1"
    assert response.headers["X-RateLimit-Remaining"] == "0"
    assert queued(runtime) == 1


def test_no_eligible_worker_after_the_grace_when_workers_vanish(client, worker_key, runtime):
    runtime.settings = runtime.settings.replace(oai_no_worker_grace_s=0.2)
    vanish = threading.Thread(target=_vanish_after_queueing, args=(runtime,))
    vanish.start()
    response = chat(client)
    vanish.join(60)
    assert response.status_code == 503
    assert response.json["error"]["code"] == "no_eligible_worker"
    assert response.json["error"]["metadata"]["request_id"]
    assert response.headers["x-should-retry"] == "false"
    with runtime.db.transaction() as session:
        assert session.query(ChatRequest).one().state == "cancelled"


def _vanish_after_queueing(runtime):
    """Once the request is queued, its only worker's last pop moves out of the online window: the worker is gone
    whatever the machine's speed (a short window instead could lapse before the admission on a slow machine)."""
    from tests.support.processes import wait_until

    wait_until(lambda: queued(runtime) == 1, timeout_s=60, what="the request to be queued")
    gone = utcnow() - dt.timedelta(seconds=runtime.settings.worker_online_window_s + 60)
    with runtime.db.transaction() as session:
        session.execute(update(Worker).values(last_pop_at=gone))


def test_restrictions_nobody_matches_is_no_eligible_worker_at_once(client, worker_key, runtime):
    response = chat(client, dict(BODY, horde={"only": ["no-such-worker"]}))
    assert response.status_code == 503 and response.json["error"]["code"] == "no_eligible_worker"
    assert queued(runtime) == 0


def test_client_agent_is_composed_and_recorded(client, worker_key, runtime):
    served = threading.Thread(target=_serve, args=(client.application.test_client(), worker_key, 2))
    served.start()
    headers = {"X-Title": "my-app", "User-Agent": "OpenAI/Python 3.57.0", "HTTP-Referer": "https://site.example/x"}
    assert chat(client, **headers).status_code == 200
    assert chat(client, **{"HTTP-Referer": "https://site.example/page", "User-Agent": "curl/8"}).status_code == 200
    served.join(10)
    with runtime.db.transaction() as session:
        agents = [request.client_agent for request in session.query(ChatRequest).order_by(ChatRequest.created_at)]
    assert agents == [
        "my-app:unknown:OpenAI/Python 3.57.0 via horde-oai-front",
        "site.example:unknown:curl/8 via horde-oai-front",
    ]


def test_no_client_input_produces_a_500(client, worker_key, runtime):
    runtime.settings = runtime.settings.replace(oai_no_worker_grace_s=0, worker_online_window_s=0)
    rng = random.Random(7)
    base = {
        "model": "m1",
        "messages": [{"role": "user", "content": "x"}],
        "max_tokens": 64,
        "temperature": 0.5,
        "tools": TOOLS,
        "tool_choice": "auto",
        "response_format": {"type": "json_object"},
        "horde": {"context_fitting": "grow"},
        "stop": ["x"],
        "seed": 1,
    }
    values = [None, True, 0, -1, 1e308, "", "x", [], {}, [{}], {"type": "text"}, "a" * 300, 2**70]
    for _ in range(300):
        body = {key: value for key, value in base.items() if rng.random() > 0.2}
        for _ in range(rng.randint(1, 3)):
            body[rng.choice(list(base) + ["messages", "models", "n", "stream"])] = rng.choice(values)
        response = client.post("/v1/chat/completions", json=body)
        assert response.status_code < 500 or response.json["error"]["code"] in (
            "no_eligible_worker",
            "queue_unavailable",
        ), (body, response.json)
    assert client.post("/v1/chat/completions", data="{not json", content_type="application/json").status_code == 400


def _serve(client, key, jobs):
    """A worker in a thread: pop with long-poll and submit, `jobs` times."""
    for _ in range(jobs):
        job = pop(client, key, max_length=8192, max_context_length=16384, threads=1, wait=5)
        if job["id"]:
            submit(client, key, job["id"])


def test_unknown_front_paths_answer_the_envelope(client):
    response = client.get("/v1/nothing-here")
    assert response.status_code == 404 and response.json["error"]["type"] == "invalid_request_error"
    assert client.get("/v1/chat/completions").json["error"]["message"]


def test_an_unknown_key_is_401_before_the_body_is_screened(client):
    response = client.post("/v1/chat/completions", json={"logit_bias": {}}, headers={"Authorization": "Bearer nope"})
    assert response.status_code == 401 and response.json["error"]["code"] == "InvalidAPIKey"
    assert response.json["error"]["type"] == "authentication_error"


def test_declarations_lowered_after_submit_end_in_no_worker_supports_limit(client, worker_key, runtime, make_user):
    runtime.settings = runtime.settings.replace(oai_no_worker_grace_s=0.2)
    _, key = make_user("client", kudos=1000)
    lowered = threading.Thread(
        target=_lower_after_queueing, args=(client.application.test_client(), worker_key, runtime)
    )
    lowered.start()
    response = chat(client, dict(BODY, max_tokens=4000), key=key)
    lowered.join(60)
    assert response.status_code == 400
    error = response.json["error"]
    assert (error["code"], error["param"]) == ("no_worker_supports_limit", "max_tokens")
    assert response.headers["x-should-retry"] == "false"


def _lower_after_queueing(client, key, runtime):
    from tests.support.processes import wait_until

    # A generous bound: a loaded CI machine can take seconds to admit the request; the wait ends when it is queued.
    wait_until(lambda: queued(runtime) == 1, timeout_s=60, what="the request to be queued")
    pop(client, key, max_length=256, max_context_length=16384, threads=1)


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/api/v2/generate/chat/async", "/api/v2/generate/chat/pop"])
def test_deeply_nested_or_broken_json_is_400(client, path):
    deep = '{"model":"m1","messages":[{"role":"user","content":"x"}],"horde":' + "[" * 3000 + "]" * 3000 + "}"
    for body in (deep, "{not json"):
        response = client.post(path, data=body, content_type="application/json")
        assert response.status_code == 400
        assert "BadRequest" in (response.json.get("rc"), response.json.get("error", {}).get("code"))


def test_wait_budget_does_not_cancel_a_request_a_worker_took(client, worker_key, runtime):
    runtime.settings = runtime.settings.replace(oai_wait_budget_s=0.5)

    def fault_then_serve(local):
        job = pop(local, worker_key, max_length=8192, max_context_length=16384, threads=1, wait=5)
        time.sleep(0.8)  # past the budget while the job is held
        local.post(
            "/api/v2/generate/chat/fault", json={"id": job["id"], "reason": "oom"}, headers={"apikey": worker_key}
        )
        _serve(local, worker_key, 1)

    worker = threading.Thread(target=fault_then_serve, args=(client.application.test_client(),))
    worker.start()
    response = chat(client, dict(BODY, horde={"availability_mode": "wait"}))
    worker.join(10)
    assert response.status_code == 200, response.json
