"""What the database knows for all processes at once, read when /metrics is scraped (nothing per request)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from sqlalchemy import func, select

from horde.accounts.models import KudosEntry
from horde.chat.models import JOB_PROCESSING, WAITING, ChatJob, ChatRequest, ChatRequestModel
from horde.workers import service as workers

if TYPE_CHECKING:
    from horde.runtime import Runtime


class DatabaseCollector(Collector):
    """Queue depth and online workers per model; jobs by end state and kudos moved by kind, since the start.

    Each scrape runs four grouped queries: the queue and the online workers are small; the job and ledger
    counts read their whole tables, which a scrape every 15 s on an indexed table keeps cheap.
    """

    def __init__(self, runtime: Runtime):
        self.runtime = runtime

    def collect(self) -> list[Metric]:
        hub = self.runtime
        with hub.db.read() as session:
            queued = session.execute(
                select(ChatRequestModel.model, func.count())
                .join(ChatRequest, ChatRequest.id == ChatRequestModel.request_id)
                .where(ChatRequest.state == WAITING)
                .group_by(ChatRequestModel.model)
            ).all()
            online = workers.online_workers(session, hub.settings.worker_online_window_s)
            jobs = session.execute(
                select(ChatJob.state, func.count()).where(ChatJob.state != JOB_PROCESSING).group_by(ChatJob.state)
            ).all()
            kudos = session.execute(
                select(KudosEntry.kind, func.sum(func.abs(KudosEntry.amount))).group_by(KudosEntry.kind)
            ).all()
        workers_by_model: dict[str, int] = {}
        for worker in online:
            for model in worker.models:
                workers_by_model[model] = workers_by_model.get(model, 0) + 1
        depth = dict(queued)
        queue_family = GaugeMetricFamily(
            "horde_queue_depth", "Chat requests waiting for a worker, per model.", labels=["model"]
        )
        workers_family = GaugeMetricFamily(
            "horde_workers_online", "Online workers serving the model.", labels=["model"]
        )
        for model in sorted(set(depth) | set(workers_by_model)):
            queue_family.add_metric([model], depth.get(model, 0))
            workers_family.add_metric([model], workers_by_model.get(model, 0))
        jobs_family = CounterMetricFamily("horde_jobs_ended", "Chat jobs by end state.", labels=["state"])
        for state, count in sorted(jobs):
            jobs_family.add_metric([state], count)
        kudos_family = CounterMetricFamily(
            "horde_kudos_moved", "Kudos moved by ledger kind (absolute amounts).", labels=["kind"]
        )
        for kind, amount in sorted(kudos):
            kudos_family.add_metric([kind], amount or 0)
        return [queue_family, workers_family, jobs_family, kudos_family]
