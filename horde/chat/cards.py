"""Per-model aggregates over the online workers: maxima of lengths, unions of declarations."""

from __future__ import annotations

from sqlalchemy.orm import Session

from horde.chat import queue
from horde.config import Settings
from horde.workers import service as workers
from horde.workers.declarations import feature_names, guarantee_names

#: An entry's `type` is the AI Horde's kind of generation, which its clients parse (text or image): a chat model
#: generates text. Chat entries are told apart by the list they are in (/status/models?type=chat) and their fields.
AI_HORDE_TYPE = "text"


def model_stats(session: Session, settings: Settings, model: str | None = None) -> list[dict]:
    # A worker in maintenance is left out, as the AI Horde lists models (text's model_status does the same).
    online = workers.online_workers(session, settings.worker_online_window_s)
    online = [worker for worker in online if not worker.maintenance]
    by_model: dict[str, list] = {}
    for worker in online:
        for name in worker.models:
            if model is None or name == model:
                by_model.setdefault(name, []).append(worker)
    job_s = queue.typical_job_s(session, settings.default_job_duration_s)
    stats = []
    for name in sorted(by_model):
        serving = by_model[name]
        features = set().union(*(feature_names(w.features_mask) for w in serving))
        guarantees = set().union(*(guarantee_names(w.guarantees_mask) for w in serving))
        threads = sum(w.threads for w in serving)
        queued = queue.waiting_for_models(session, [name])
        limits = [w.max_temperature_with_tools for w in serving if w.max_temperature_with_tools is not None]
        stats.append(
            {
                "name": name,
                "type": AI_HORDE_TYPE,
                "workers": len(serving),
                "threads": threads,
                "queued": queued,
                "estimated_wait": queue.wait_estimate_s(queued, threads, job_s) if queued else 0,
                "max_length": max(w.max_length for w in serving),
                "max_context_length": max(w.max_context_length for w in serving),
                "features": sorted(features),
                "guarantees": sorted(guarantees),
                "max_temperature_with_tools": max(limits) if len(limits) == len(serving) else None,
                "worker_ids": sorted(w.id for w in serving),
                "worker_names": sorted(w.name for w in serving),
            }
        )
    return stats
