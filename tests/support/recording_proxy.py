"""An HTTP forwarder that keeps what a real client sent to the Horde and what it got back, for tests that must
show what a client sends (tools, tasks, limits), refused requests included, which the Horde's database never holds.

`RecordingProxy(target_url)` listens on a free local port and forwards every request to `target_url`; the answer
is relayed as it arrives (a stream stays a stream), each response closing its connection. `exchanges` lists what
passed, oldest first.
"""

from __future__ import annotations

import http.client
import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

from tests.support.processes import free_port

CHUNK_BYTES = 65536
UPSTREAM_TIMEOUT_S = 300.0
#: What is kept of an answer's body: enough for an error's JSON or a stream's first events.
KEPT_ANSWER_CHARS = 20_000
HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "host"}


@dataclass
class Exchange:
    method: str
    path: str
    body: dict | None
    status: int = 0
    #: The answer's headers, names in lower case.
    headers: dict[str, str] = field(default_factory=dict)
    answer: str = ""
    done: bool = field(default=False)


class RecordingProxy:
    def __init__(self, target_url: str):
        target = urlsplit(target_url)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.exchanges: list[Exchange] = []
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def _forward(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                exchange = Exchange(self.command, self.path, _json_or_none(raw))
                proxy.exchanges.append(exchange)
                headers = {name: value for name, value in self.headers.items() if name.lower() not in HOP_BY_HOP}
                upstream = http.client.HTTPConnection(target.hostname, target.port, timeout=UPSTREAM_TIMEOUT_S)
                try:
                    upstream.request(self.command, self.path, body=raw or None, headers=headers)
                    answer = upstream.getresponse()
                    exchange.status = answer.status
                    exchange.headers = {name.lower(): value for name, value in answer.getheaders()}
                    self.send_response(answer.status)
                    for name, value in answer.getheaders():
                        if name.lower() not in HOP_BY_HOP:
                            self.send_header(name, value)
                    self.send_header("Connection", "close")
                    self.end_headers()
                    while chunk := answer.read1(CHUNK_BYTES):
                        if len(exchange.answer) < KEPT_ANSWER_CHARS:  # kept before the client can see it
                            exchange.answer += chunk.decode(errors="replace")
                        self.wfile.write(chunk)
                        self.wfile.flush()
                finally:
                    upstream.close()
                    exchange.done = True

            do_GET = do_POST = do_PUT = do_DELETE = _forward

            def log_message(self, format, *args) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="recording-proxy", daemon=True)
        self._thread.start()

    def posts(self, path: str) -> list[Exchange]:
        return [exchange for exchange in list(self.exchanges) if exchange.method == "POST" and exchange.path == path]

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def _json_or_none(raw: bytes) -> dict | None:
    try:
        value = json.loads(raw) if raw else None
    except ValueError:
        return None
    return value if isinstance(value, dict) else None
