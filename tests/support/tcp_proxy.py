"""A TCP forwarder that can play a database outage without touching the database.

`TcpProxy(host, port)` listens on a free local port and forwards every
connection to host:port. `cut()` drops every open connection and closes the
listening socket, so that new connections are refused; `resume()` listens again
on the same port.
"""

from __future__ import annotations

import contextlib
import socket
import threading

from tests.support.processes import free_port

ACCEPT_TICK_S = 0.1
CHUNK_BYTES = 65536


class TcpProxy:
    def __init__(self, target_host: str, target_port: int):
        self.target = (target_host, target_port)
        self.port = free_port()
        self._lock = threading.Lock()
        self._sockets: set[socket.socket] = set()
        self._listening = threading.Event()
        self._acceptor: threading.Thread | None = None
        self.resume()

    def resume(self) -> None:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(128)
        listener.settimeout(ACCEPT_TICK_S)
        self._listening.set()
        self._acceptor = threading.Thread(target=self._accept, args=(listener,), name="proxy-accept", daemon=True)
        self._acceptor.start()

    def cut(self) -> None:
        """Refuse new connections, then drop every open one."""
        self._listening.clear()
        if self._acceptor is not None:
            self._acceptor.join()
        with self._lock:
            sockets, self._sockets = self._sockets, set()
        for sock in sockets:
            _close(sock)

    def close(self) -> None:
        self.cut()

    def _accept(self, listener: socket.socket) -> None:
        with listener:
            while self._listening.is_set():
                try:
                    client, _ = listener.accept()
                except TimeoutError:
                    continue
                client.settimeout(None)
                try:
                    upstream = socket.create_connection(self.target)
                except OSError:
                    _close(client)
                    continue
                with self._lock:
                    self._sockets.update((client, upstream))
                for source, sink in ((client, upstream), (upstream, client)):
                    threading.Thread(target=_pump, args=(source, sink), name="proxy-pump", daemon=True).start()


def proxy_database(database_url: str) -> tuple[TcpProxy, str]:
    """A proxy in front of the database `database_url` names, and the URL that reaches it through the proxy."""
    from sqlalchemy.engine import make_url

    url = make_url(database_url)
    proxy = TcpProxy(url.host or "127.0.0.1", url.port or 5432)
    return proxy, url.set(host="127.0.0.1", port=proxy.port).render_as_string(hide_password=False)


def _pump(source: socket.socket, sink: socket.socket) -> None:
    try:
        while True:
            data = source.recv(CHUNK_BYTES)
            if not data:
                break
            sink.sendall(data)
    except OSError:
        pass
    finally:
        _close(source)
        _close(sink)


def _close(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    with contextlib.suppress(OSError):
        sock.close()
