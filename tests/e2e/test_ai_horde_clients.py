"""The AI Horde's own clients against a real Horde and a real text worker: each client's exact call sequence.

KoboldAI Lite (LostRuins/lite.koboldai.net, index.html): on load `status/performance` (its "connect": without a
JSON answer it stays offline), the image models it lists beside (`status/models`), `find_user`; the AI picker's
`status/models?type=text` and `workers?type=text`; `generate/text/async` with `apikey` and `Client-Agent:
KoboldAiLite:17`, polling `status/{id}` until done, then reading it once more; abort: `DELETE status/{id}`
without a key; "Manage My Workers": `find_user`'s `worker_ids`, `workers/{id}` each, `PUT` maintenance and info,
`DELETE`. SillyTavern (src/endpoints/horde.js, public/scripts/horde.js): `status/heartbeat`,
`status/models?type=text`, `workers?type=text`, `generate/text/async` with `apikey` and `Client-Agent`,
`status/{id}` and `DELETE` with only `Client-Agent`, `find_user`. horde-sdk 0.18.0: its status, worker, stats
requests (tests/support/horde_sdk/registry_scenarios.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import requests

from tests.support.harness import unique_model
from tests.support.horde_sdk import run_sdk_module
from tests.support.processes import wait_until

TEXT_RULES = Path(__file__).with_name("rules_text.json")
REGISTRY_SCENARIOS = "tests.support.horde_sdk.registry_scenarios"
LITE_AGENT = "KoboldAiLite:17"
TAVERN_AGENT = "SillyTavern:1.13.2:Cohee#1207"
DONE_TIMEOUT_S = 60
TIMEOUT_S = 10
#: SillyTavern's Kobold samplers, with the fields generateHorde sets (n and the formatting flags).
TAVERN_PARAMS = {
    "rep_pen": 1.1,
    "temperature": 0.7,
    "top_k": 40,
    "top_p": 0.9,
    "typical": 1,
    "tfs": 1,
    "top_a": 0,
    "rep_pen_range": 1024,
    "rep_pen_slope": 0.9,
    "sampler_order": [6, 0, 1, 3, 4, 2, 5],
    "stop_sequence": ["\nUser:"],
    "use_default_badwordsids": False,
    "min_p": 0.05,
    "n": 1,
    "frmtadsnsp": False,
    "frmtrmblln": False,
    "frmtrmspch": False,
    "frmttriminc": False,
}


def run_registry_scenario(horde, scenario: str, **args) -> dict:
    return run_sdk_module(horde, REGISTRY_SCENARIOS, scenario, json.dumps(args))


def api(horde, path: str) -> str:
    return horde.url + "/api/v2" + path


def lite_payload(prompt: str, model: str) -> dict:
    """Lite's submit_payload for the Horde (index.html), with its default samplers and finalize_submit_payload's
    Horde fields."""
    return {
        "prompt": prompt,
        "params": {
            "n": 1,
            "max_context_length": 2048,
            "max_length": 120,
            "rep_pen": 1.07,
            "temperature": 0.75,
            "top_p": 0.92,
            "top_k": 100,
            "top_a": 0,
            "typical": 1,
            "tfs": 1,
            "rep_pen_range": 360,
            "rep_pen_slope": 0.7,
            "sampler_order": [6, 0, 1, 3, 4, 2, 5],
            "use_default_badwordsids": False,
            "stop_sequence": ["You:", "\nYou "],
            "min_p": 0,
            "dynatemp_range": 0,
            "dynatemp_exponent": 1,
            "smoothing_factor": 0,
        },
        "models": [model],
        "workers": [],
    }


def lite_poll(horde, request_id: str) -> dict:
    """Lite's polling loop: give up on a `message`, a fault or is_possible false; stop once done."""

    def done():
        status = requests.get(api(horde, f"/generate/text/status/{request_id}"), timeout=TIMEOUT_S).json()
        assert status.get("message") is None and not status["faulted"] and status["is_possible"] is not False, status
        return status if status["done"] else None

    return wait_until(done, DONE_TIMEOUT_S, "the text request to finish")


def test_koboldai_lite_loads_connects_generates_and_aborts(horde):
    model = unique_model("lite")
    worker = horde.worker([model], "--kinds", "text", rules=TEXT_RULES)
    key = horde.user(kudos=100)

    performance = requests.get(api(horde, "/status/performance"), timeout=TIMEOUT_S)
    assert performance.status_code == 200
    figures = performance.json()  # Lite adds these four up; a missing one would be NaN on its page
    assert figures["text_worker_count"] >= 1
    assert all(
        isinstance(figures[name], int | float)
        for name in ("queued_text_requests", "queued_tokens", "past_minute_tokens")
    )
    assert requests.get(api(horde, "/status/models"), timeout=TIMEOUT_S).json() == []  # fetch_image_models
    user = requests.get(api(horde, "/find_user"), headers={"apikey": key}, timeout=TIMEOUT_S).json()
    assert user["username"] and user["kudos"] == 100

    models = requests.get(api(horde, "/status/models?type=text"), timeout=TIMEOUT_S).json()
    entry = next(item for item in models if item["name"] == model)
    assert (entry["count"], entry["type"], entry["eta"], entry["queued"]) == (1, "text", 0, 0)
    listed = next(
        item
        for item in requests.get(api(horde, "/workers?type=text"), timeout=TIMEOUT_S).json()
        if item["name"] == worker.worker_name
    )  # show_workers reads these
    assert listed["performance"] == "No requests fulfilled yet" and listed["models"] == [model]
    assert isinstance(listed["kudos_rewards"], int) and listed["maintenance_mode"] is False and listed["info"] is None

    headers = {"Content-Type": "application/json", "apikey": key, "Client-Agent": LITE_AGENT}
    queued = requests.post(
        api(horde, "/generate/text/async"), json=lite_payload("Hi there", model), headers=headers, timeout=TIMEOUT_S
    )
    assert queued.status_code == 202, queued.text
    request_id = queued.json()["id"]
    lite_poll(horde, request_id)
    final = requests.get(api(horde, f"/generate/text/status/{request_id}"), timeout=TIMEOUT_S).json()
    generation = final["generations"][0]  # handle_incoming_text(text, worker_name, model, kudos)
    assert (generation["text"], generation["worker_name"], generation["model"]) == (
        "You wrote: Hi there",
        worker.worker_name,
        model,
    )
    assert final["kudos"] > 0

    slow = requests.post(  # a second of generation (rules_text.json): the abort comes well within it
        api(horde, "/generate/text/async"),
        json=lite_payload("take your time with this one", model),
        headers=headers,
        timeout=TIMEOUT_S,
    ).json()["id"]
    wait_until(
        lambda: requests.get(api(horde, f"/generate/text/status/{slow}"), timeout=TIMEOUT_S).json()["processing"] == 1,
        DONE_TIMEOUT_S,
        "the worker to take the slow generation",
    )
    aborted = requests.delete(api(horde, f"/generate/text/status/{slow}"), timeout=TIMEOUT_S)
    assert aborted.status_code == 200
    assert (aborted.json()["done"], aborted.json()["processing"]) == (False, 1)  # as it stood before the abort
    raced = requests.get(api(horde, "/generate/text/status/"), timeout=TIMEOUT_S)  # the id Lite cleared on abort
    assert (raced.status_code, raced.headers["Content-Type"], raced.json()["rc"]) == (
        404,
        "application/json",
        "NotFound",
    )
    assert lite_poll(horde, slow)["finished"] == 1  # the running generation finishes and is kept


def test_koboldai_lite_manages_its_workers(horde):
    model = unique_model("lite-own")
    owner = horde.user()
    worker = horde.worker([model], "--kinds", "text", key=owner, rules=TEXT_RULES)
    key = horde.user(kudos=100)
    user = requests.get(api(horde, "/find_user"), headers={"apikey": owner}, timeout=TIMEOUT_S).json()
    mine = [
        requests.get(api(horde, f"/workers/{worker_id}"), timeout=TIMEOUT_S).json() for worker_id in user["worker_ids"]
    ]
    ours = next(item for item in mine if item.get("id") and item["name"] == worker.worker_name)  # show_my_own_workers
    assert (ours["maintenance_mode"], ours["online"]) == (False, True)

    lite = {"Content-Type": "application/json", "apikey": owner}
    updated = requests.put(  # update_my_workers: the checkbox and the description
        api(horde, f"/workers/{ours['id']}"),
        json={"maintenance": True, "info": "My GPU"},
        headers=lite,
        timeout=TIMEOUT_S,
    )
    assert (updated.status_code, updated.json()) == (200, {"maintenance": True, "info": "My GPU"})
    shown = requests.get(api(horde, f"/workers/{ours['id']}"), timeout=TIMEOUT_S).json()
    assert (shown["maintenance_mode"], shown["info"]) == (True, "My GPU")
    refused = requests.post(  # the worker's own pops are refused now
        api(horde, "/generate/text/pop"),
        json={"name": worker.worker_name, "models": [model], "max_length": 512, "max_context_length": 4096},
        headers={"apikey": owner},
        timeout=TIMEOUT_S,
    )
    assert (refused.status_code, refused.json()["rc"]) == (403, "WorkerMaintenance")
    waiting = requests.post(
        api(horde, "/generate/text/async"),
        json=lite_payload("while away", model),
        headers={"apikey": key},
        timeout=TIMEOUT_S,
    ).json()["id"]
    assert requests.get(api(horde, f"/generate/text/status/{waiting}"), timeout=TIMEOUT_S).json()["waiting"] == 1
    assert worker.alive()  # the bridge waits out its owner's maintenance
    back = requests.put(
        api(horde, f"/workers/{ours['id']}"), json={"maintenance": False}, headers=lite, timeout=TIMEOUT_S
    )
    assert back.json() == {"maintenance": False}
    assert lite_poll(horde, waiting)["generations"][0]["worker_name"] == worker.worker_name

    deleted = requests.delete(api(horde, f"/workers/{ours['id']}"), headers=lite, timeout=TIMEOUT_S)  # delete_my_worker
    assert (deleted.status_code, deleted.json()) == (
        200,
        {"deleted_id": ours["id"], "deleted_name": worker.worker_name},
    )
    gone = requests.get(api(horde, f"/workers/{ours['id']}"), timeout=TIMEOUT_S)
    assert (gone.status_code, gone.json()["rc"]) == (404, "WorkerNotFound")


def test_sillytavern_horde_calls(horde):
    model = unique_model("tavern")
    worker = horde.worker([model], "--kinds", "text", rules=TEXT_RULES)
    key = horde.user(kudos=100)
    agent = {"Client-Agent": TAVERN_AGENT}

    assert requests.get(api(horde, "/status/heartbeat"), headers=agent, timeout=TIMEOUT_S).ok  # /api/horde/status
    models = requests.get(api(horde, "/status/models?type=text"), headers=agent, timeout=TIMEOUT_S).json()
    assert model in [item["name"] for item in models]
    workers = requests.get(api(horde, "/workers?type=text"), headers=agent, timeout=TIMEOUT_S).json()
    serving = [item for item in workers if model in item["models"] and not item["maintenance_mode"]]
    # adjustHordeGenerationParams: the lowest context and length of the workers serving the chosen models
    context = min(2048, *(item["max_context_length"] for item in serving))
    length = min(100, *(item["max_length"] for item in serving))

    def generate(prompt: str) -> str:
        params = {**TAVERN_PARAMS, "max_context_length": context, "max_length": length}
        answer = requests.post(
            api(horde, "/generate/text/async"),
            json={"prompt": prompt, "params": params, "trusted_workers": False, "models": [model]},
            headers={"Content-Type": "application/json", "apikey": key, **agent},
            timeout=TIMEOUT_S,
        )
        assert answer.ok, answer.text
        return answer.json()["id"]

    def task_status(request_id: str) -> dict:
        status = requests.get(api(horde, f"/generate/text/status/{request_id}"), headers=agent, timeout=TIMEOUT_S)
        assert not status.json()["faulted"] and status.json()["is_possible"] is not False
        return status.json()

    request_id = generate("User: Hello\nBot:")
    done = wait_until(
        lambda: (lambda status: status if status["done"] and status["generations"] else None)(task_status(request_id)),
        DONE_TIMEOUT_S,
        "SillyTavern's generation",
    )
    assert (done["generations"][0]["worker_name"], done["generations"][0]["model"]) == (worker.worker_name, model)
    assert done["generations"][0]["text"].startswith("You wrote: User: Hello")

    # The user stops it (/api/horde/cancel-task) while it runs: a second (rules_text.json), which the worker finishes
    # (a text job's generation is not interrupted) before the test's teardown stops it.
    slow = generate("take your time, User: Again\nBot:")
    cancelled = requests.delete(api(horde, f"/generate/text/status/{slow}"), headers=agent, timeout=TIMEOUT_S)
    assert cancelled.status_code == 200 and cancelled.json()["done"] is False
    user = requests.get(api(horde, "/find_user"), headers={"apikey": key, **agent}, timeout=TIMEOUT_S).json()
    assert user["kudos"] == 100 - done["kudos"]
    metrics = requests.get(horde.url + "/metrics", timeout=TIMEOUT_S).text
    assert 'horde_client_requests_total{client="SillyTavern",endpoint="text"}' in metrics


def test_horde_sdk_reads_status_workers_models_and_stats(horde):
    model = unique_model("sdk-meta")
    worker = horde.worker([model], "--kinds", "text", rules=TEXT_RULES)
    horde.worker([unique_model("chat")])  # a chat worker: lists without a type stay parseable by the SDK
    result = run_registry_scenario(horde, "meta", model=model, worker_name=worker.worker_name)

    assert result["performance"]["text_worker_count"] >= 1 and result["performance"]["worker_count"] == 0
    assert result["news"] == [] and result["heartbeat"] == "2.0.0" and result["image_models"] == []
    assert [model, "text", 1] in result["text_models"]
    assert result["one_model"] == [[model, "text", 1]]
    assert (result["by_name"]["name"], result["by_name"]["type"], result["by_id"]) == (
        worker.worker_name,
        "text",
        worker.worker_name,
    )
    assert [worker.worker_name, "text"] in result["every_worker"]
    assert {kind for _, kind in result["every_worker"]} == {"text"}
    assert result["missing_worker"] == ["RequestErrorResponse", "WorkerNotFound"]
    assert result["image_totals"]["total"] == {"images": 0, "ps": 0}
    assert result["image_models_stats"] == {"day": {}, "month": {}, "total": {}}
    assert result["teams"] == [] and result["team"]["rc"] == "TeamNotFound"


def test_horde_sdk_modifies_and_deletes_a_worker(horde):
    owner = horde.user()
    worker = horde.worker([unique_model("sdk-own")], "--kinds", "text", key=owner, rules=TEXT_RULES)
    result = run_registry_scenario(horde, "manage", key=owner, worker_name=worker.worker_name)
    assert result["on"] == {"maintenance": True, "info": "A note"} and result["seen_on"] == [True, "A note"]
    assert result["off"] == {"maintenance": False} and result["seen_off"] is False
    assert result["deleted"] == {"deleted_id": result["worker_id"], "deleted_name": worker.worker_name}
    gone = requests.get(api(horde, f"/workers/{result['worker_id']}"), timeout=TIMEOUT_S)
    assert gone.json()["rc"] == "WorkerNotFound"


def test_horde_sdk_cancel_reads_the_status_before_the_cancel(horde):
    result = run_registry_scenario(horde, "cancel", key=horde.user(kudos=100), model=unique_model("none"))
    assert (result["done"], result["waiting"], result["finished"]) == (False, 2, 0)
    after = requests.get(api(horde, f"/generate/text/status/{result['id']}"), timeout=TIMEOUT_S).json()
    assert (after["done"], after["waiting"]) == (True, 0)
