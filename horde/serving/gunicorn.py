"""A gunicorn worker class whose connections are served like `python -m horde serve`'s (horde/serving/).

    gunicorn -k horde.gunicorn_worker.HordeWorker -w 4 --worker-connections 2000 -b 0.0.0.0:7001 'horde.wsgi:app'

It is gunicorn's gevent worker (gevent's StreamServer, gunicorn's processes, signals and graceful timeout)
whose `handle` runs the Horde's connection loop instead of gunicorn's parser: the same strict HTTP/1.1
framing, the idle, header and body timeouts, and the cap of --worker-connections per process, at which the
idlest or slowest connection is shed for a new one. gunicorn's access log is written when it is on.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import gevent
from gunicorn.http.wsgi import base_environ as gunicorn_environ  # type: ignore[import-untyped]
from gunicorn.workers.ggevent import GeventWorker  # type: ignore[import-untyped]

from horde.config import Settings
from horde.serving.connection import Connection, Limits
from horde.serving.environ import base_environ
from horde.serving.heap import settle_for_serving
from horde.serving.registry import ConnectionRegistry
from horde.serving.response import Answer
from horde.serving.server import raise_descriptor_limit

#: gevent's pool stops accepting when it is full: it holds this many times the cap, so that a new connection
#: always reaches the registry, which sheds one for it (or refuses it), while the shed ones finish closing.
POOL_SIZE_PER_CONNECTION = 2
STOPPING_POLL_S = 0.2


class _Logged:
    """What gunicorn's access log reads of an answer."""

    def __init__(self, answer: Answer) -> None:
        self.status = answer.status
        self.headers = answer.headers
        self.sent = answer.sent


class HordeWorker(GeventWorker):
    alive: bool  # gunicorn's: False once the process is to stop

    def init_process(self) -> None:
        self.limits = Limits.from_settings(Settings.from_env())
        self.registry = ConnectionRegistry(self.cfg.worker_connections)
        self.worker_connections = self.cfg.worker_connections * POOL_SIZE_PER_CONNECTION
        self._environs: dict[Any, dict[str, Any]] = {}
        raise_descriptor_limit()
        super().init_process()

    def load_wsgi(self) -> None:
        """gunicorn builds the app in each process after the fork (no --preload): settle the heap then."""
        super().load_wsgi()
        settle_for_serving()

    def run(self) -> None:
        gevent.spawn(self._stop_connections_when_stopping)
        super().run()

    def handle(self, listener: Any, client: Any, addr: Any) -> None:
        base = self._environs.get(listener)
        if base is None:
            extra = gunicorn_environ(self.cfg)
            base = self._environs[listener] = base_environ(listener.getsockname(), extra)
        Connection(client, addr, self.wsgi, self.limits, self.registry, base, self._after_answer).run()

    def _after_answer(self, environ: dict, answer: Answer, headers: list[tuple[bytes, bytes]], took_s: float) -> None:
        self.nr += 1
        if self.nr >= self.max_requests and self.alive:
            self.log.info("Autorestarting worker after current request.")
            self.alive = False
        if getattr(self.log, "access_log_enabled", True):
            request_headers = [(name.decode("latin-1"), value.decode("latin-1")) for name, value in headers]
            self.log.access(_Logged(answer), request_headers, environ, timedelta(seconds=took_s))

    def _stop_connections_when_stopping(self) -> None:
        """On gunicorn's graceful stop, close the idle connections and keep none alive: gunicorn waits for every
        connection to end before the process exits."""
        while self.alive:
            gevent.sleep(STOPPING_POLL_S)
        self.registry.stop()
