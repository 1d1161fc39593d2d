"""Serving on gevent: TCP_NODELAY on the listening socket, the client socket in the environ.

The front reads `horde.socket` to notice a client that closed its connection
while its non-streamed request waits, and cancels the request on the Horde.

Connections are bounded in time as well: a kept-alive connection that sends no
new request within HORDE_HTTP_IDLE_TIMEOUT_S is closed, and a request's line
and headers must arrive within HORDE_HTTP_HEADER_TIMEOUT_S (counted from the
accept on a new connection, from the first byte on a kept-alive one). A
response being written (a stream, a long-poll) is never idle.
"""

from __future__ import annotations

import logging
import resource
import signal
import socket
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import gevent
from flask import Flask
from gevent.event import Event
from gevent.pywsgi import WSGIHandler, WSGIServer

from horde.chat import service
from horde.errors import ServiceUnavailable
from horde.heap import settle_for_serving
from horde.http_headers import RequestHeaders, read_headers
from horde.ops.drain import DRAIN
from horde.sqlite_checkpoint import start_checkpoints

if TYPE_CHECKING:
    from horde.config import Settings
    from horde.runtime import Runtime

log = logging.getLogger(__name__)
SOCKET_ENVIRON_KEY = "horde.socket"
KEY_PURGE_EVERY_SWEEPS = 60
#: A connection's read buffer (gevent's default is 8 KiB). Every held stream keeps its connection's buffer for
#: as long as it waits; a request line and usual headers fit in one read, and a large body is read past the
#: buffer, straight into its destination.
READ_BUFFER_BYTES = 2048
#: A response's first write goes out in the same send as its headers up to this size (copied once). gevent sends
#: the headers alone first: two packets, and two wake-ups of the reader, for every answer that fits in one.
HEADERS_WITH_FIRST_WRITE_MAX_BYTES = 64 * 1024


#: Header fields the environ carries under CGI's names (gevent's get_environ sets them), not as HTTP_ keys.
_KEYS_OUTSIDE_HTTP = frozenset({"CONTENT_TYPE", "CONTENT_LENGTH"})


class ConnectionTimedOut(socket.timeout):
    """Raised into a connection's greenlet by its idle or header timer; gevent then closes it quietly."""


class _Unread:
    """Stands in for a request body the server will not read: the connection closes instead."""

    def _discard(self) -> None:
        return None


class HordeHandler(WSGIHandler):
    idle_timeout_s: float = 75.0
    header_timeout_s: float = 10.0

    def __init__(self, sock: socket.socket, address: tuple, server: WSGIServer, rfile: Any = None) -> None:
        if rfile is None:
            rfile = sock.makefile("rb", READ_BUFFER_BYTES)
        super().__init__(sock, address, server, rfile)
        self._requests_read = 0
        self._header_timer: gevent.Timeout | None = None
        self._held: list[Any] | None = None

    def handle_one_request(self) -> Any:
        try:
            return super().handle_one_request()
        finally:
            self._cancel_header_timer()

    def read_requestline(self) -> str:
        if self._requests_read:  # kept alive: wait for the next request's first byte
            with gevent.Timeout(self.idle_timeout_s, ConnectionTimedOut("idle")):
                self.rfile.peek(1)
        self._header_timer = gevent.Timeout.start_new(self.header_timeout_s, ConnectionTimedOut("headers"))
        self._requests_read += 1
        return super().read_requestline()

    def read_request(self, raw_requestline: str) -> Any:
        try:
            return super().read_request(raw_requestline)
        finally:
            self._cancel_header_timer()

    def MessageClass(self, stream: Any, *_: Any) -> RequestHeaders:  # gevent names it so
        return read_headers(stream)

    def _headers(self) -> Iterator[tuple[str, str]]:
        """The environ's HTTP_ keys, as gevent makes them (a name with an underscore is dropped: it could pass
        for another once dashes become underscores), from the fields as read, without writing lines to split."""
        for name, value in self.headers.fields:
            if "_" in name:
                continue
            key = name.replace("-", "_").upper()
            if key not in _KEYS_OUTSIDE_HTTP:
                yield "HTTP_" + key, value

    def log_request(self) -> None:
        """Nothing: the request log (horde/ops/request_log.py) has each request's line. gevent's formats a line of
        its own for every request, and writes it even where its log is off."""

    def _handle_client_error(self, ex: Exception) -> Any:
        if isinstance(ex, ConnectionTimedOut):
            return None  # close without an answer, as for a client that went away
        return super()._handle_client_error(ex)

    def _cancel_header_timer(self) -> None:
        if self._header_timer is not None:
            self._header_timer.close()
            self._header_timer = None

    def _write_with_headers(self, data: Any) -> None:
        """gevent's, with the headers and this first write (chunk framing included) sent as one."""
        if not data or len(data) > HEADERS_WITH_FIRST_WRITE_MAX_BYTES:
            return super()._write_with_headers(data)
        self._held = []  # gevent's sends, held
        try:
            super()._write_with_headers(data)
        finally:
            pieces, self._held = self._held, None
        return self._send_now(b"".join(pieces))

    def _sendall(self, data: Any) -> None:
        """gevent's hook for every send: held while the headers wait for the first write, else sent now."""
        if self._held is not None:
            self._held.append(data)
        else:
            self._send_now(data)

    def _send_now(self, data: Any) -> None:
        """gevent's sendall, with one send() first: gevent's asks the kernel for the socket's send buffer size on
        every call, a system call per answer for nothing when the first send takes it all, as it usually does.
        What the first send leaves (or a failure, which it raises again and records) goes to gevent's."""
        try:
            sent = self.socket.send(data)
        except OSError:
            sent = 0
        if sent < len(data):
            super()._sendall(memoryview(data)[sent:] if sent else data)
        self.response_length += sent

    def get_environ(self) -> dict:
        environ = super().get_environ()
        environ[SOCKET_ENVIRON_KEY] = self.socket
        return environ

    def run_application(self) -> None:
        try:
            super().run_application()
        finally:
            if self.close_connection:  # e.g. a body refused as too large: do not read it to keep the connection
                self.wsgi_input = _Unread()


def handler_class(settings: Settings) -> type[HordeHandler]:
    """HordeHandler with the settings' connection timeouts."""
    return type(
        "ConfiguredHordeHandler",
        (HordeHandler,),
        {"idle_timeout_s": settings.http_idle_timeout_s, "header_timeout_s": settings.http_header_timeout_s},
    )


def listen(host: str, port: int) -> socket.socket:
    listener = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    listener.bind((host, port))
    listener.listen(2048)
    return listener


def sweeper(runtime: Runtime) -> None:
    """Expire jobs past their ttl, so a request restarts even when nobody pops.

    Every KEY_PURGE_EVERY_SWEEPS sweeps, drop the rate counts of seconds past the window, expired idempotency
    keys and stored responses.
    """
    from horde.accounts import rate_limit
    from horde.oai import idempotency
    from horde.oai.responses import store as responses_store
    from horde.text import service as text_service

    sweeps = 0
    while True:
        gevent.sleep(runtime.settings.sweep_interval_s)
        sweeps += 1
        try:
            service.sweep(runtime)
            text_service.sweep(runtime)
            if sweeps % KEY_PURGE_EVERY_SWEEPS == 0:
                # With the purges, not every sweep: a budget's sum reads its caller's seconds from the window's start on
                # the primary key, so older rows are never read, and the DELETE reads the whole table.
                with runtime.db.autocommit() as session:
                    rate_limit.forget_past_seconds(session)
                idempotency.purge_expired(runtime)
                responses_store.purge_expired(runtime)
        except ServiceUnavailable:
            pass  # the database logs the outage once; the next sweep tries again
        except Exception:
            log.exception("sweeping expired jobs failed")


def start_housekeeping(runtime: Runtime) -> None:
    """A serving process's background work: the sweeper and, on SQLite, the log's checkpoints."""
    gevent.spawn(sweeper, runtime)
    start_checkpoints(runtime.db.sqlite_file)


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


def serve(app: Flask, runtime: Runtime, host: str, port: int) -> None:
    """Serve until SIGTERM, then drain: stop accepting, let streams and waits run up to HORDE_DRAIN_S, end the rest."""
    raise_descriptor_limit()
    listener = listen(host, port)
    start_housekeeping(runtime)
    server = WSGIServer(
        listener,
        app,
        handler_class=handler_class(runtime.settings),
        log=None,
        error_log=logging.getLogger("horde.wsgi"),
    )
    stopped = Event()

    def shut_down():
        server.close()
        DRAIN.run(runtime.bus, runtime.settings.drain_s)
        stopped.set()

    gevent.signal_handler(signal.SIGTERM, lambda: gevent.spawn(shut_down))
    settle_for_serving()
    server.start()
    print(f"Horde serving on http://{host}:{listener.getsockname()[1]}", flush=True)
    stopped.wait()
    log.info("stopped")
