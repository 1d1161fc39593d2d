"""horde-sdk 0.18.0 against a running Horde, run as its own process: the SDK reads AI_HORDE_URL at import.

python -m tests.support.horde_sdk.text_scenarios SCENARIO '{"key": ..., ...}' prints one JSON object.
Scenarios: `generate` (simple client, with an SDK worker thread serving the jobs; the 0.18.0 simple
client counts one response per text request, so with n > 1 it returns at its `timeout`, or as soon as it
sees one generation, and the scenario then reads the status until the request is done), `cancel` (manual
client: queue, DELETE, status), `worker` (pop and submit request models only).
"""

from __future__ import annotations

import json
import sys
import threading
import time

from horde_sdk.ai_horde_api import ai_horde_clients
from horde_sdk.ai_horde_api.ai_horde_clients import AIHordeAPIManualClient, AIHordeAPISimpleClient
from horde_sdk.ai_horde_api.apimodels import (
    DeleteTextGenerateRequest,
    TextGenerateAsyncRequest,
    TextGenerateAsyncResponse,
    TextGenerateJobPopRequest,
    TextGenerateJobPopResponse,
    TextGenerateStatusRequest,
    TextGenerateStatusResponse,
    TextGenerationJobSubmitRequest,
)
from horde_sdk.ai_horde_api.apimodels.base import JobSubmitResponse
from horde_sdk.ai_horde_api.apimodels.generate.text._async import ModelGenerationInputKobold
from horde_sdk.ai_horde_api.consts import GENERATION_STATE
from horde_sdk.generic_api.apimodels import RequestErrorResponse

POP_INTERVAL_S = 0.2
WORKER_DEADLINE_S = 120.0
#: The simple client pauses 4 s between two checks of a request (time.sleep(4) in ai_horde_clients); here it
#: checks as often as the scenario's worker pops, so that a test waits for the generation, not for that pause.
SDK_CHECK_PAUSE_S = POP_INTERVAL_S


class _ShortPauses:
    """The `time` module as horde-sdk's clients module sees it, with every sleep at most SDK_CHECK_PAUSE_S."""

    def __getattr__(self, name: str):
        return getattr(time, name)

    @staticmethod
    def sleep(seconds: float) -> None:
        time.sleep(min(seconds, SDK_CHECK_PAUSE_S))


ai_horde_clients.time = _ShortPauses()


def worker_round(client: AIHordeAPIManualClient, key: str, name: str, model: str, amount: int = 1) -> dict:
    """One pop and the submits of every id it got: the generation is the prompt's tail reversed."""
    popped = client.submit_request(
        TextGenerateJobPopRequest(
            apikey=key,
            name=name,
            models=[model],
            max_length=512,
            max_context_length=2048,
            threads=amount,
            amount=amount,
            bridge_agent="sdk-worker:1:test",
        ),
        TextGenerateJobPopResponse,
    )
    if isinstance(popped, RequestErrorResponse):
        return {"error": popped.message}
    ids = [str(job_id) for job_id in popped.ids]
    rewards = []
    for job_id in ids:
        text = f" reply to [{popped.payload.prompt}] by {name}"
        submitted = client.submit_request(
            TextGenerationJobSubmitRequest(apikey=key, id=job_id, generation=text, state=GENERATION_STATE.ok, seed=7),
            JobSubmitResponse,
        )
        rewards.append(submitted.reward if isinstance(submitted, JobSubmitResponse) else submitted.message)
    skipped = popped.skipped.model_dump(exclude_none=True) if popped.skipped else {}
    return {
        "ids": ids,
        "model": popped.model,
        "n": popped.payload.n if popped.model else None,
        "max_length": popped.payload.max_length if popped.model else None,
        "rewards": rewards,
        "skipped": skipped,
    }


def serve(key: str, name: str, model: str, stop: threading.Event, served: list) -> None:
    client = AIHordeAPIManualClient()
    deadline = time.monotonic() + WORKER_DEADLINE_S
    while not stop.is_set() and time.monotonic() < deadline:
        result = worker_round(client, key, name, model)
        if result.get("ids"):
            served.append(result)
        else:
            stop.wait(POP_INTERVAL_S)


def generate(args: dict) -> dict:
    stop, served = threading.Event(), []
    worker = threading.Thread(
        target=serve, args=(args.get("worker_key"), args.get("worker_name"), args["model"], stop, served), daemon=True
    )
    if args.get("worker_key"):  # else a worker of the test's own serves the jobs
        worker.start()
    try:
        status, job_id = AIHordeAPISimpleClient().text_generate_request(
            TextGenerateAsyncRequest(
                apikey=args["key"],
                prompt=args["prompt"],
                models=[args["model"]],
                params=ModelGenerationInputKobold(n=args.get("n", 1), max_length=32),
            ),
            timeout=args.get("timeout", 120),
        )
        if args.get("worker_key") and not status.done:
            status = _until_done(str(job_id), status)
    finally:
        stop.set()
        if worker.is_alive():
            worker.join(10)
    return {
        "id": str(job_id),
        "done": status.done,
        "finished": status.finished,
        "kudos": status.kudos,
        "generations": [
            {"text": g.text, "seed": g.seed, "worker_name": g.worker_name, "model": g.model, "state": str(g.state)}
            for g in status.generations
        ],
        "served": served,
    }


def _until_done(job_id: str, status: TextGenerateStatusResponse) -> TextGenerateStatusResponse:
    """The request's status once it is done, as the serving worker thread goes on. The 0.18.0 simple client
    stops when it sees as many generations as it counts responses (one): with n > 1 it may stop between two
    submits, or wait out its timeout when it first looks after both."""
    client = AIHordeAPIManualClient()
    deadline = time.monotonic() + WORKER_DEADLINE_S
    while not status.done and time.monotonic() < deadline:
        time.sleep(POP_INTERVAL_S)
        status = client.submit_request(TextGenerateStatusRequest(id=job_id), TextGenerateStatusResponse)
    return status


def cancel(args: dict) -> dict:
    client = AIHordeAPIManualClient()
    queued = client.submit_request(
        TextGenerateAsyncRequest(
            apikey=args["key"],
            prompt=args["prompt"],
            models=[args["model"]],
            params=ModelGenerationInputKobold(n=3, max_length=32),
        ),
        TextGenerateAsyncResponse,
    )
    job_id = str(queued.id_)
    first = worker_round(client, args["worker_key"], args["worker_name"], args["model"])
    deleted = client.submit_request(
        DeleteTextGenerateRequest(apikey=args["key"], id=job_id), TextGenerateStatusResponse
    )
    after = worker_round(client, args["worker_key"], args["worker_name"], args["model"])
    final = client.submit_request(TextGenerateStatusRequest(id=job_id), TextGenerateStatusResponse)
    return {
        "id": job_id,
        "first_pop": first,
        "deleted": _counts(deleted),
        "pop_after_delete": after,
        "final": _counts(final),
        "texts": [g.text for g in final.generations],
    }


def _counts(status: TextGenerateStatusResponse) -> dict:
    return {
        "finished": status.finished,
        "processing": status.processing,
        "waiting": status.waiting,
        "done": status.done,
        "faulted": status.faulted,
        "kudos": status.kudos,
    }


def worker(args: dict) -> dict:
    client = AIHordeAPIManualClient()
    return worker_round(client, args["worker_key"], args["worker_name"], args["model"], amount=args.get("amount", 1))


SCENARIOS = {"generate": generate, "cancel": cancel, "worker": worker}

if __name__ == "__main__":
    print(json.dumps(SCENARIOS[sys.argv[1]](json.loads(sys.argv[2]))))
