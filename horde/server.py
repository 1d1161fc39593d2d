"""Serving on gevent: TCP_NODELAY on the listening socket, the client socket in the environ.

The front reads `horde.socket` to notice a client that closed its connection
while its non-streamed request waits, and cancels the request on the Horde.
"""

from __future__ import annotations

import logging
import socket
from typing import TYPE_CHECKING

import gevent
from flask import Flask
from gevent.pywsgi import WSGIHandler, WSGIServer

from horde.chat import service
from horde.errors import ServiceUnavailable

if TYPE_CHECKING:
    from horde.runtime import Runtime

log = logging.getLogger(__name__)
SOCKET_ENVIRON_KEY = "horde.socket"
KEY_PURGE_EVERY_SWEEPS = 60


class HordeHandler(WSGIHandler):
    def get_environ(self) -> dict:
        environ = super().get_environ()
        environ[SOCKET_ENVIRON_KEY] = self.socket
        return environ


def listen(host: str, port: int) -> socket.socket:
    listener = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    listener.bind((host, port))
    listener.listen(2048)
    return listener


def sweeper(runtime: Runtime) -> None:
    """Expire jobs past their ttl, so a request restarts even when nobody pops; drop expired idempotency keys."""
    from horde.oai import idempotency

    sweeps = 0
    while True:
        gevent.sleep(runtime.settings.sweep_interval_s)
        sweeps += 1
        try:
            service.sweep(runtime)
            if sweeps % KEY_PURGE_EVERY_SWEEPS == 0:
                idempotency.purge_expired(runtime)
        except ServiceUnavailable:
            pass  # the database logs the outage once; the next sweep tries again
        except Exception:
            log.exception("sweeping expired jobs failed")


def start_sweeper(runtime: Runtime) -> gevent.Greenlet:
    return gevent.spawn(sweeper, runtime)


def serve(app: Flask, runtime: Runtime, host: str, port: int) -> None:
    listener = listen(host, port)
    start_sweeper(runtime)
    server = WSGIServer(listener, app, handler_class=HordeHandler, log=None, error_log=logging.getLogger("horde.wsgi"))
    print(f"Horde serving on http://{host}:{listener.getsockname()[1]}", flush=True)
    server.serve_forever()
