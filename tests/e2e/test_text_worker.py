"""The reference worker serves the AI Horde's text jobs: on its own (--kinds text) and beside chat."""

from __future__ import annotations

import requests

from tests.e2e.test_text_horde_sdk import balance, run_sdk
from tests.support.harness import unique_model
from tests.support.processes import wait_until

DONE_TIMEOUT_S = 60


def queue_text(horde, key: str, body: dict) -> str:
    answer = requests.post(horde.url + "/api/v2/generate/text/async", headers={"apikey": key}, json=body, timeout=10)
    assert answer.status_code == 202, answer.text
    return answer.json()["id"]


def finished_status(horde, request_id: str) -> dict:
    def done():
        status = requests.get(horde.url + f"/api/v2/generate/text/status/{request_id}", timeout=5).json()
        return status if status["done"] or status["faulted"] else None

    return wait_until(done, DONE_TIMEOUT_S, "the text request to finish")


def workers_of_type(horde, kind: str) -> set[str]:
    listed = requests.get(horde.url + f"/api/v2/workers?type={kind}", timeout=5).json()
    assert {item["type"] for item in listed} <= {kind}
    return {item["name"] for item in listed}


def test_text_worker_keeps_the_stop_sequence_and_serves_each_generation(horde):
    model = unique_model("text")
    worker = horde.worker([model], "--kinds", "text", "--threads", "2")
    key = horde.user(kudos=50)
    request_id = queue_text(
        horde,
        key,
        {"prompt": "a fox jumps", "models": [model], "params": {"n": 2, "max_length": 32, "stop_sequence": ["wrote"]}},
    )
    status = finished_status(horde, request_id)
    assert status["done"] and status["finished"] == 2
    assert [g["text"] for g in status["generations"]] == ["You wrote", "You wrote"]  # the AI Horde keeps the stop
    assert {g["worker_name"] for g in status["generations"]} == {worker.worker_name}
    assert 50 - balance(horde, key) == status["kudos"] > 0
    assert worker.worker_name in workers_of_type(horde, "text")
    assert worker.worker_name not in workers_of_type(horde, "chat")  # a text-only worker is not a chat worker


def test_text_worker_cuts_at_max_length(horde):
    model = unique_model("text")
    horde.worker([model], "--kinds", "text")
    key = horde.user(kudos=50)
    prompt = "word " * 40
    request_id = queue_text(horde, key, {"prompt": prompt, "models": [model], "params": {"max_length": 16}})
    status = finished_status(horde, request_id)
    assert status["generations"][0]["text"] == ("You wrote: " + prompt)[: 16 * 4]


def test_one_worker_pops_chat_and_text(horde):
    model = unique_model("both")
    worker = horde.worker([model], "--kinds", "chat,text")
    key = horde.user(kudos=50)
    chat = horde.openai(key).chat.completions.create(model=model, messages=[{"role": "user", "content": "hi"}])
    assert chat.choices[0].message.content == "You wrote: hi"
    status = finished_status(horde, queue_text(horde, key, {"prompt": "hello", "models": [model]}))
    assert status["generations"][0]["text"] == "You wrote: hello"
    assert worker.worker_name in workers_of_type(horde, "chat") & workers_of_type(horde, "text")


def test_horde_sdk_client_through_the_reference_worker(horde):
    model = unique_model("text")
    horde.worker([model], "--kinds", "text")
    result = run_sdk(horde, "generate", key=horde.user(kudos=50), model=model, prompt="From the SDK", n=1)
    assert result["done"] and [g["text"] for g in result["generations"]] == ["You wrote: From the SDK"]
