"""A local image server on loopback for the image fetch tests: plain, trickling and slow-to-answer paths."""

from __future__ import annotations

import base64
import contextlib
import http.server
import threading
import time

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8/5+hHgAHggJ/PchI7wAAAABJRU5ErkJggg=="
)
TRICKLE_BYTES = 40
TRICKLE_GAP_S = 0.2  # well below the per-read timeouts a per-read fetch would use; 8 s in all


class ImageServer:
    def __init__(self):
        self.hosts: list[str] = []
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self):
                server.hosts.append(self.headers.get("Host", ""))
                if self.path == "/trickle.png":
                    self._head(TRICKLE_BYTES)
                    for _ in range(TRICKLE_BYTES):
                        self.wfile.write(b"\0")
                        self.wfile.flush()
                        time.sleep(TRICKLE_GAP_S)
                    return
                self._head(len(PNG))
                self.wfile.write(PNG)

            def _head(self, length):
                self.send_response(200)
                self.send_header("Content-Type", "image/png")
                self.send_header("Content-Length", str(length))
                self.end_headers()

            def log_message(self, *args):
                pass

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def close(self):
        self._server.shutdown()
        self._server.server_close()


@contextlib.contextmanager
def running_image_server():
    server = ImageServer()
    try:
        yield server
    finally:
        server.close()
