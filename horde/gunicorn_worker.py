"""A gunicorn worker class that applies the Horde's connection timeouts.

    gunicorn -k horde.gunicorn_worker.HordeWorker -w 4 --worker-connections 2000 -b 0.0.0.0:7001 'horde.wsgi:app'

It is gunicorn's gevent pywsgi worker with the handler of `python -m horde
serve` (horde/server.py): HORDE_HTTP_IDLE_TIMEOUT_S for kept-alive
connections, HORDE_HTTP_HEADER_TIMEOUT_S for a request's headers, and no read
of a body the app refused as too large. gunicorn's own `-k gevent` has only
`--keep-alive`, one limit for both waits.
"""

from __future__ import annotations

from gunicorn.workers.ggevent import GeventPyWSGIWorker, PyWSGIHandler  # type: ignore[import-untyped]

from horde.config import Settings
from horde.heap import settle_for_serving
from horde.server import HordeHandler, raise_descriptor_limit


class HordeGunicornHandler(HordeHandler, PyWSGIHandler):
    """The Horde's timeouts, with gunicorn's access log and environ keys."""

    def log_request(self) -> None:
        """gunicorn's access log line, when it is on (--access-logfile and the like): gunicorn's handler makes
        the line's parts for every request before its log looks whether it writes them."""
        if getattr(self.server.log, "access_log_enabled", True):
            PyWSGIHandler.log_request(self)


class HordeWorker(GeventPyWSGIWorker):
    wsgi_handler = HordeGunicornHandler

    def init_process(self) -> None:
        settings = Settings.from_env()
        HordeGunicornHandler.idle_timeout_s = settings.http_idle_timeout_s
        HordeGunicornHandler.header_timeout_s = settings.http_header_timeout_s
        raise_descriptor_limit()
        super().init_process()

    def load_wsgi(self) -> None:
        """gunicorn builds the app in each process after the fork (no --preload): settle the heap then."""
        super().load_wsgi()
        settle_for_serving()
