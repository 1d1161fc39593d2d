"""`python -m horde serve`: one process on gevent, its connections served by horde/serving/.

TCP_NODELAY is set on the listening socket (accepted sockets inherit it). The connections are bounded in
time (HORDE_HTTP_IDLE_TIMEOUT_S, HORDE_HTTP_HEADER_TIMEOUT_S, HORDE_HTTP_BODY_TIMEOUT_S) and in number
(HORDE_MAX_CONNECTIONS: at the cap the idlest or slowest is shed for a new one).
"""

from __future__ import annotations

import logging
import resource
import signal
import socket
from collections.abc import Callable
from typing import TYPE_CHECKING

import gevent
from flask import Flask
from gevent.event import Event
from gevent.server import StreamServer

from horde.events.drain import DRAIN
from horde.serving.connection import Limits, handler
from horde.serving.environ import base_environ
from horde.serving.heap import settle_for_serving
from horde.serving.registry import ConnectionRegistry

if TYPE_CHECKING:
    from horde.runtime import Runtime

log = logging.getLogger(__name__)


def listen(host: str, port: int) -> socket.socket:
    listener = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    listener.bind((host, port))
    listener.listen(2048)
    return listener


def raise_descriptor_limit() -> int:
    """Lift the soft limit on open files to the hard one: each kept-alive client holds a descriptor."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (ValueError, OSError):
            log.warning("could not raise the open files limit from %s to %s", soft, hard)
    return soft


def serve(app: Flask, runtime: Runtime, host: str, port: int, housekeeping: Callable[[Runtime], None]) -> None:
    """Serve until SIGTERM, then drain: stop accepting, let streams and waits run up to HORDE_DRAIN_S, end the rest.

    `housekeeping` starts the process's background work once it listens (horde/ops/housekeeping.py: the layer
    above the domains, which the serving layer does not import).
    """
    raise_descriptor_limit()
    listener = listen(host, port)
    housekeeping(runtime)
    settings = runtime.settings
    registry = ConnectionRegistry(settings.max_connections)
    handle = handler(app, Limits.from_settings(settings), registry, base_environ(listener.getsockname()))
    server = StreamServer(listener, handle)
    stopped = Event()

    def shut_down():
        server.close()
        registry.stop()
        DRAIN.run(runtime.bus, settings.drain_s)
        stopped.set()

    gevent.signal_handler(signal.SIGTERM, lambda: gevent.spawn(shut_down))
    settle_for_serving()
    server.start()
    print(f"Horde serving on http://{host}:{listener.getsockname()[1]}", flush=True)
    stopped.wait()
    log.info("stopped")
