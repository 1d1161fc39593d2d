"""The AI Horde's text API through horde-sdk 0.18.0, as a client and as a worker, against a real server."""

from __future__ import annotations

import json

import requests

from tests.support.harness import unique_model
from tests.support.horde_sdk import run_sdk_module

# The SDK's simple client (checking as often as the scenario's worker pops: text_scenarios.SDK_CHECK_PAUSE_S) may,
# with n > 1, wait out its timeout (see the test): one check past the timeout, then the scenario reads the status
# until the request is done.
SDK_N_TIMEOUT_S = 1


def run_sdk(horde, scenario: str, **args) -> dict:
    return run_sdk_module(horde, "tests.support.horde_sdk.text_scenarios", scenario, json.dumps(args))


def find_user(horde, key: str) -> dict:
    return requests.get(horde.url + "/api/v2/find_user", headers={"apikey": key}, timeout=5).json()


def balance(horde, key: str) -> int:
    return find_user(horde, key)["kudos"]


def test_keys_take_the_ai_hordes_form(horde):
    key = horde.user()
    assert len(key) == 22 and set(key) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")


def test_simple_client_gets_a_generation_from_an_sdk_worker(horde):
    model = unique_model("text")
    client_key, worker_key = horde.user(kudos=100), horde.user()
    name = f"sdk-{model[-8:]}"
    result = run_sdk(
        horde,
        "generate",
        key=client_key,
        worker_key=worker_key,
        worker_name=name,
        model=model,
        prompt="Once upon a time",
        n=1,
    )
    assert result["done"] is True and result["finished"] == 1
    assert result["generations"] == [
        {
            "text": f" reply to [Once upon a time] by {name}",
            "seed": 7,
            "worker_name": name,
            "model": model,
            "state": "ok",
        }
    ]
    charged = 100 - balance(horde, client_key)
    assert charged == result["kudos"] > 0
    assert balance(horde, worker_key) == charged  # rewarded once, as much as charged


def test_simple_client_with_n_above_one_gets_one_job_per_generation(horde):
    """The SDK waits out SDK_N_TIMEOUT_S here (it expects one response), or stops when it sees one generation
    between the worker's two submits; the scenario then reads the status until the request is done."""
    model = unique_model("text")
    client_key, worker_key = horde.user(kudos=100), horde.user()
    result = run_sdk(
        horde,
        "generate",
        key=client_key,
        worker_key=worker_key,
        worker_name=f"sdk-{model[-8:]}",
        model=model,
        prompt="Twice",
        n=2,
        timeout=SDK_N_TIMEOUT_S,
    )
    assert result["finished"] == 2 and len(result["generations"]) == 2
    assert [len(round_["ids"]) for round_ in result["served"]] == [1, 1]  # one job each, popped one at a time
    assert len({g["text"] for g in result["generations"]}) == 1
    assert 100 - balance(horde, client_key) == result["kudos"] == balance(horde, worker_key)


def test_cancel_stops_handing_out_generations_and_keeps_the_finished_one(horde):
    model = unique_model("text")
    client_key, worker_key = horde.user(kudos=100), horde.user()
    result = run_sdk(
        horde,
        "cancel",
        key=client_key,
        worker_key=worker_key,
        worker_name=f"sdk-{model[-8:]}",
        model=model,
        prompt="Cancel me",
    )
    assert len(result["first_pop"]["ids"]) == 1 and result["first_pop"]["n"] == 1
    assert (result["deleted"]["waiting"], result["deleted"]["done"]) == (2, False)  # as it stood before the cancel
    assert result["pop_after_delete"]["ids"] == []
    assert result["final"]["finished"] == 1 and result["texts"] == [f" reply to [Cancel me] by sdk-{model[-8:]}"]
    assert 100 - balance(horde, client_key) == result["final"]["kudos"] > 0


def test_sdk_worker_pops_a_batch_up_to_amount_and_reads_skipped_counts(horde):
    model = unique_model("text")
    client_key, worker_key = horde.user(kudos=100), horde.user()
    name = f"sdk-{model[-8:]}"
    first = run_sdk(horde, "worker", worker_key=worker_key, worker_name=name, model=model)
    assert first["ids"] == [] and first["model"] is None  # checked in; nothing queued
    queued = requests.post(
        horde.url + "/api/v2/generate/text/async",
        headers={"apikey": client_key},
        timeout=5,
        json={"prompt": "Batch", "models": [model], "params": {"n": 3, "max_length": 600}},
    )
    assert queued.status_code == 202, queued.text
    skipped = run_sdk(horde, "worker", worker_key=worker_key, worker_name=name, model=model)
    assert skipped["ids"] == [] and skipped["skipped"].get("max_length") == 1  # the SDK worker declares 512
    requests.delete(horde.url + f"/api/v2/generate/text/status/{queued.json()['id']}", timeout=5)
    fitting = requests.post(
        horde.url + "/api/v2/generate/text/async",
        headers={"apikey": client_key},
        timeout=5,
        json={"prompt": "Batch", "models": [model], "params": {"n": 3, "max_length": 64}},
    )
    batch = run_sdk(horde, "worker", worker_key=worker_key, worker_name=name, model=model, amount=2)
    assert len(batch["ids"]) == 2 and batch["n"] == 2 and batch["max_length"] == 64
    status = requests.get(horde.url + f"/api/v2/generate/text/status/{fitting.json()['id']}", timeout=5).json()
    assert (status["finished"], status["waiting"]) == (2, 1)
