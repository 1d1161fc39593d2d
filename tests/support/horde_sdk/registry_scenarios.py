"""horde-sdk 0.18.0's status, worker and stats requests against a running Horde, run as its own process (the SDK
reads AI_HORDE_URL at import): python -m tests.support.horde_sdk.registry_scenarios SCENARIO '{...}' prints one JSON
object of what each request parsed to. Scenarios: `meta` (performance, news, heartbeat, models, stats, workers
by name and id, teams), `manage` (ModifyWorkerRequest on and off, then DeleteWorkerRequest), `cancel` (a text
request's DeleteTextGenerateRequest while its generation waits).

horde-sdk 0.18.0 has no team requests: the scenario reads /teams with `requests`, as a client without one would.
"""

from __future__ import annotations

import json
import os
import sys

import requests
from horde_sdk.ai_horde_api.ai_horde_clients import AIHordeAPIManualClient, AIHordeAPISimpleClient
from horde_sdk.ai_horde_api.apimodels import (
    AIHordeHeartbeatRequest,
    AIHordeHeartbeatResponse,
    DeleteTextGenerateRequest,
    DeleteWorkerRequest,
    DeleteWorkerResponse,
    HordePerformanceRequest,
    HordePerformanceResponse,
    HordeStatusModelsAllRequest,
    HordeStatusModelsAllResponse,
    HordeStatusModelsSingleRequest,
    HordeStatusModelsSingleResponse,
    ModifyWorkerRequest,
    ModifyWorkerResponse,
    SingleWorkerDetailsRequest,
    SingleWorkerDetailsResponse,
    TextGenerateAsyncRequest,
    TextGenerateAsyncResponse,
    TextGenerateStatusResponse,
)
from horde_sdk.ai_horde_api.apimodels.generate.text._async import ModelGenerationInputKobold
from horde_sdk.ai_horde_api.consts import MODEL_TYPE
from horde_sdk.generic_api.apimodels import RequestErrorResponse

TIMEOUT_S = 10


def _parsed(answer, expected: type):
    """The SDK's parse of one answer: it must be `expected`, never an error response."""
    if isinstance(answer, RequestErrorResponse):
        raise AssertionError(f"{expected.__name__}: the Horde answered {answer.rc}: {answer.message}")
    assert isinstance(answer, expected), type(answer)
    return answer


def meta(args: dict) -> dict:
    manual, simple = AIHordeAPIManualClient(), AIHordeAPISimpleClient()
    performance = _parsed(
        manual.submit_request(HordePerformanceRequest(), HordePerformanceResponse), HordePerformanceResponse
    )
    heartbeat = _parsed(
        manual.submit_request(AIHordeHeartbeatRequest(), AIHordeHeartbeatResponse), AIHordeHeartbeatResponse
    )
    text_models = _parsed(
        manual.submit_request(HordeStatusModelsAllRequest(type=MODEL_TYPE.text), HordeStatusModelsAllResponse),
        HordeStatusModelsAllResponse,
    )
    one_model = _parsed(
        manual.submit_request(
            HordeStatusModelsSingleRequest(model_name=args["model"]), HordeStatusModelsSingleResponse
        ),
        HordeStatusModelsSingleResponse,
    )
    by_name = simple.worker_details_by_name(args["worker_name"])
    every_worker = simple.workers_all_details()
    missing = manual.submit_request(SingleWorkerDetailsRequest(worker_id="no-such-worker"), SingleWorkerDetailsResponse)
    base = os.environ["AI_HORDE_URL"].rstrip("/")
    return {
        "performance": performance.model_dump(),
        "news": [piece.model_dump() for piece in simple.get_news()],
        "heartbeat": heartbeat.version,
        "image_models": [entry.name for entry in simple.image_status_models_all()],
        "text_models": [(entry.name, str(entry.type_), entry.count) for entry in text_models],
        "one_model": [(entry.name, str(entry.type_), entry.count) for entry in one_model],
        "by_name": {"id": str(by_name.id_), "name": by_name.name, "type": str(by_name.type_)},
        "by_id": simple.worker_details(str(by_name.id_)).name,
        "every_worker": sorted((worker.name, str(worker.type_)) for worker in every_worker),
        "missing_worker": [type(missing).__name__, getattr(missing, "rc", None)],
        "image_totals": simple.image_stats_totals().model_dump(),
        "image_models_stats": simple.image_stats_models().model_dump(),
        "text_totals": simple.text_stats_totals().model_dump(),
        "teams": requests.get(f"{base}/v2/teams", timeout=TIMEOUT_S).json(),
        "team": requests.get(f"{base}/v2/teams/no-such-team", timeout=TIMEOUT_S).json(),
    }


def manage(args: dict) -> dict:
    simple = AIHordeAPISimpleClient()
    worker_id = str(simple.worker_details_by_name(args["worker_name"]).id_)
    on = simple.worker_modify(
        ModifyWorkerRequest(
            apikey=args["key"], worker_id=worker_id, maintenance=True, maintenance_msg="Back soon", info="A note"
        )
    )
    seen_on = simple.worker_details(worker_id)
    off = simple.worker_modify(ModifyWorkerRequest(apikey=args["key"], worker_id=worker_id, maintenance=False))
    seen_off = simple.worker_details(worker_id)
    deleted = _parsed(
        AIHordeAPIManualClient().submit_request(
            DeleteWorkerRequest(apikey=args["key"], worker_id=worker_id), DeleteWorkerResponse
        ),
        DeleteWorkerResponse,
    )
    return {
        "worker_id": worker_id,
        "on": _parsed(on, ModifyWorkerResponse).model_dump(exclude_none=True),
        "seen_on": [seen_on.maintenance_mode, seen_on.info],
        "off": _parsed(off, ModifyWorkerResponse).model_dump(exclude_none=True),
        "seen_off": seen_off.maintenance_mode,
        "deleted": deleted.model_dump(),
    }


def cancel(args: dict) -> dict:
    client = AIHordeAPIManualClient()
    queued = _parsed(
        client.submit_request(
            TextGenerateAsyncRequest(
                apikey=args["key"], prompt="Cancel me", models=[args["model"]], params=ModelGenerationInputKobold(n=2)
            ),
            TextGenerateAsyncResponse,
        ),
        TextGenerateAsyncResponse,
    )
    deleted = _parsed(
        client.submit_request(
            DeleteTextGenerateRequest(apikey=args["key"], id=str(queued.id_)), TextGenerateStatusResponse
        ),
        TextGenerateStatusResponse,
    )
    return {"id": str(queued.id_), "done": deleted.done, "waiting": deleted.waiting, "finished": deleted.finished}


SCENARIOS = {"meta": meta, "manage": manage, "cancel": cancel}

if __name__ == "__main__":
    print(json.dumps(SCENARIOS[sys.argv[1]](json.loads(sys.argv[2])), default=str))
