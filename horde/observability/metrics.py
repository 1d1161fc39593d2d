"""Prometheus metrics, correct across gunicorn processes.

Each process counts what it serves (HTTP requests, chat outcomes, time to first token, open streams and
long-polls) in prometheus_client's metrics; under gunicorn they live in a multiprocess directory shared
by the run's processes and a scrape sums them. What the database already knows for every process at once
(queue depth, online workers, jobs by end state, kudos moved) is read at scrape time (`gauges.py`).

prometheus_client chooses its storage when it is imported: `use_multiprocess_dir` must run before.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import tempfile
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from prometheus_client.registry import Collector

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
LATENCY_BUCKETS_S = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)
UNMATCHED_ROUTE = "unmatched"
#: The `client` label of horde_client_requests_total: the name part of a Client-Agent, at most this long, and at
#: most MAX_CLIENT_NAMES distinct names per process; the names past them are counted as OTHER_CLIENTS.
CLIENT_NAME_MAX_CHARS = 64
MAX_CLIENT_NAMES = 50
OTHER_CLIENTS = "other"
UNKNOWN_CLIENT = "unknown"


def run_directory(master_pid: int) -> Path:
    """One directory per gunicorn run: named by the master's pid and its start time, so a reused pid is a new run."""
    try:
        started = Path(f"/proc/{master_pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        started = "0"
    return Path(tempfile.gettempdir()) / f"horde-metrics-{master_pid}-{started}"


def use_multiprocess_dir(path: str | Path) -> None:
    """Keep this process's metrics in `path`, shared with the other processes of the run."""
    Path(path).mkdir(parents=True, exist_ok=True)
    os.environ[MULTIPROC_ENV] = str(path)


def multiprocess_dir() -> str | None:
    return os.environ.get(MULTIPROC_ENV) or None


class Metrics:
    def __init__(self) -> None:
        from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, disable_created_metrics

        disable_created_metrics()  # the *_created series double the output and nothing here reads them
        self.registry = CollectorRegistry(auto_describe=True)
        registry = self.registry

        def counter(name: str, documentation: str, labels: list[str]) -> Counter:
            return Counter(name, documentation, labels, registry=registry)

        def histogram(name: str, documentation: str, labels: list[str]) -> Histogram:
            return Histogram(name, documentation, labels, buckets=LATENCY_BUCKETS_S, registry=registry)

        self.http_requests = counter(
            "horde_http_requests_total", "HTTP requests by route, method and status.", ["route", "method", "status"]
        )
        self.http_latency = histogram(
            "horde_http_request_duration_seconds",
            "HTTP request duration until the last byte of the answer, by route and method.",
            ["route", "method"],
        )
        self.generation_requests = counter(
            "horde_generation_requests_total",
            "Chat and text requests by endpoint and outcome (done, faulted, cancelled, an error code, disconnected).",
            ["endpoint", "outcome"],
        )
        self.first_token = histogram(
            "horde_time_to_first_token_seconds",
            "From the call to the first generated text the front saw, by endpoint.",
            ["endpoint"],
        )
        self.completion = histogram(
            "horde_time_to_completion_seconds", "From the call to the finished reply, by endpoint.", ["endpoint"]
        )
        self.open_streams = Gauge(
            "horde_open_streams",
            "Open client streams and waits (stream or not).",
            ["endpoint"],
            multiprocess_mode="livesum",
            registry=registry,
        )
        self.prompt_tokens = counter(
            "horde_prompt_tokens_total", "Prompt tokens of the replies accepted, by kind (chat, text).", ["kind"]
        )
        self.cached_prompt_tokens = counter(
            "horde_cached_prompt_tokens_total",
            "Of those, the prompt tokens the workers' backends read from their cache (as the workers report), by kind.",
            ["kind"],
        )
        self.long_polls = Gauge(
            "horde_open_long_polls", "Worker pops waiting for a job.", multiprocess_mode="livesum", registry=registry
        )
        self.client_requests = counter(
            "horde_client_requests_total",
            "Chat and text requests queued through the native API, by the name in their Client-Agent "
            f"(name:version:contact) and endpoint; a process counts at most {MAX_CLIENT_NAMES} names, "
            f"the rest as '{OTHER_CLIENTS}'.",
            ["client", "endpoint"],
        )
        self.client_names = ClientNames(MAX_CLIENT_NAMES)

    def exposition(self, extra_collectors: Iterable[Collector] = ()) -> bytes:
        """The text format: this process's metrics, or the run's in multiprocess mode, then `extra_collectors`."""
        from prometheus_client import CollectorRegistry, generate_latest
        from prometheus_client.multiprocess import MultiProcessCollector

        path = multiprocess_dir()
        if path:
            registry = CollectorRegistry(auto_describe=False)
            MultiProcessCollector(registry, path=path)
        else:
            registry = self.registry
        output = generate_latest(registry)
        if extra_collectors:
            extra = CollectorRegistry(auto_describe=False)
            for collector in extra_collectors:
                extra.register(collector)
            output += generate_latest(extra)
        return output


class ClientNames:
    """The label of a Client-Agent: its name part, among the first `limit` distinct names this process saw."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._seen: set[str] = set()
        self._lock = threading.Lock()

    def label(self, client_agent: str | None) -> str:
        name = client_name(client_agent)
        if name in self._seen:
            return name
        with self._lock:
            if len(self._seen) < self.limit:
                self._seen.add(name)
                return name
        return OTHER_CLIENTS


def client_name(client_agent: str | None) -> str:
    """`name` of `name:version:contact` (the AI Horde's Client-Agent; a bare name or `name:version` too), printable
    and at most CLIENT_NAME_MAX_CHARS long; UNKNOWN_CLIENT for none."""
    name = (client_agent or "").split(":", 1)[0]
    name = "".join(char for char in name if char.isprintable()).strip()[:CLIENT_NAME_MAX_CHARS]
    return name or UNKNOWN_CLIENT


def count_client_request(client_agent: str | None, endpoint: str) -> None:
    """One request queued by the client that `client_agent` names, on `endpoint` (text or chat)."""
    registry = metrics()
    registry.client_requests.labels(registry.client_names.label(client_agent), endpoint).inc()


_metrics: Metrics | None = None


def metrics() -> Metrics:
    """This process's metrics, made on first use (after `use_multiprocess_dir`, if any)."""
    global _metrics
    if _metrics is None:
        _metrics = Metrics()
        if multiprocess_dir():
            atexit.register(_mark_dead, os.getpid())
    return _metrics


def count_prompt(kind: str, usage: dict) -> None:
    """An accepted reply's prompt tokens and, of those, the ones its worker read from cache."""
    board = metrics()
    board.prompt_tokens.labels(kind).inc(usage.get("prompt_tokens") or 0)
    board.cached_prompt_tokens.labels(kind).inc(usage.get("cached_tokens") or 0)


@contextlib.contextmanager
def long_poll() -> Iterator[None]:
    """Count a worker's pop in horde_open_long_polls while it runs."""
    gauge = metrics().long_polls
    gauge.inc()
    try:
        yield
    finally:
        gauge.dec()


def _mark_dead(pid: int) -> None:
    """Drop this process's live gauges from the run's sums when it exits."""
    from prometheus_client import multiprocess

    if os.getpid() == pid:
        multiprocess.mark_process_dead(pid)
