"""Kudos only for work that shows (issue 38, decision 0028), through a real server: a text worker that submits
an empty generation claiming 1,024 tokens is paid the floor, not for 1,024 tokens."""

from __future__ import annotations

import uuid

import requests

from horde.chat.pricing import MIN_PRICE_KUDOS

#: The issue's finding: anonymous requests (within the free allowance) for a 72B model, each answered empty.
EMPTY_SUBMITS = 20
BIG_MODEL = "aphrodite/Qwen/Qwen2.5-72B-Instruct"
ANONYMOUS_KEY = "0000000000"
#: The issue's exact submit body, but for the job's id.
EMPTY_BODY = {"generation": "", "completion_tokens": 1024}
HTTP_TIMEOUT_S = 10


def _post(horde, path: str, key: str, body: dict) -> requests.Response:
    return requests.post(f"{horde.url}/api/v2{path}", json=body, headers={"apikey": key}, timeout=HTTP_TIMEOUT_S)


def _kudos(horde, key: str) -> int:
    answer = requests.get(f"{horde.url}/api/v2/find_user", headers={"apikey": key}, timeout=HTTP_TIMEOUT_S)
    return answer.json()["kudos"]


def test_empty_generations_claiming_max_length_earn_the_floor(horde):
    owner = horde.user()
    worker = {"name": f"empty-{uuid.uuid4().hex[:8]}", "models": [BIG_MODEL], "max_length": 1024}
    assert _post(horde, "/generate/text/pop", owner, worker).json()["id"] is None  # online: the allowance is 4096
    rewards = []
    for _ in range(EMPTY_SUBMITS):
        body = {"prompt": "Tell me a long story. " * 200, "models": [BIG_MODEL], "params": {"max_length": 1024}}
        queued = _post(horde, "/generate/text/async", ANONYMOUS_KEY, body)
        assert queued.status_code == 202, queued.text
        job = _post(horde, "/generate/text/pop", owner, worker).json()
        assert job["id"] is not None, job
        submitted = _post(horde, "/generate/text/submit", owner, {"id": job["id"], **EMPTY_BODY})
        assert submitted.status_code == 200, submitted.text
        rewards.append(submitted.json()["reward"])
        status = requests.get(f"{horde.url}/api/v2/generate/text/status/{queued.json()['id']}", timeout=5).json()
        assert status["kudos"] == rewards[-1]  # the requester is charged what the worker earned
    earned = _kudos(horde, owner)
    print(f"\nthe owner's kudos after {EMPTY_SUBMITS} empty submits of {BIG_MODEL} jobs: {earned} (rewards {rewards})")
    assert rewards == [MIN_PRICE_KUDOS] * EMPTY_SUBMITS
    assert earned == MIN_PRICE_KUDOS * EMPTY_SUBMITS
