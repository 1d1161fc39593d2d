"""A local HTTP server that answers every POST at once with one fixed chat completion: what a client costs by
itself (bench/front.py times the OpenAI SDK against it, and a plain http.client). Run as a script, it prints
its port on its first line and serves until killed."""

from __future__ import annotations

import json
import socket
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ANSWER = json.dumps(
    {
        "id": "chatcmpl-canned",
        "object": "chat.completion",
        "created": 0,
        "model": "bench/front-model",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "The bench answer: Say something short."},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 12, "completion_tokens": 8, "total_tokens": 20},
    }
).encode()


HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(ANSWER)


class Canned(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the SDK and the Horde use it

    def setup(self) -> None:
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.wfile.write(HEAD + ANSWER)  # one send, as the Horde answers

    def log_message(self, *_) -> None:
        return None


def main() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Canned)  # the SDK and http.client each keep a connection
    print(server.server_port, flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
