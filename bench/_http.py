"""A lean keep-alive HTTP/1.1 client on gevent sockets, for load benchmarks.

A load generator on the same two cores as the server must spend little CPU per
request, or it measures itself: `requests` costs about a millisecond a call,
this a tenth of that. It speaks just enough HTTP/1.1 for the Horde's answers:
Content-Length bodies, chunked bodies (SSE streams), and `Connection: close`.
"""

from __future__ import annotations

import contextlib
import json

from gevent import socket as gsocket  # cooperative sockets, no global monkey-patching

HEADER_END = b"\r\n\r\n"
RECV_BYTES = 65536


class ConnectionLost(Exception):
    """The server closed the connection; `answered` tells whether any byte of the answer arrived."""

    def __init__(self, answered: bool):
        super().__init__("connection closed by the server" + (" mid-answer" if answered else ""))
        self.answered = answered


class Connection:
    """One connection, reopened when the server closes it between two requests."""

    def __init__(self, host: str, port: int, timeout_s: float = 120.0):
        self.host, self.port, self.timeout_s = host, port, timeout_s
        self._sock = None
        self._buffer = b""
        self.reconnects = 0

    def close(self) -> None:
        if self._sock is not None:
            with contextlib.suppress(OSError):
                self._sock.close()
        self._sock, self._buffer = None, b""

    def request(self, method: str, path: str, headers: dict, body: dict | None = None) -> tuple[int, bytes]:
        """(status, body). A request on a reused connection that the server had closed is sent again
        once, on a new connection, when no byte of its answer had arrived (nothing was processed)."""
        payload = json.dumps(body, separators=(",", ":")).encode() if body is not None else b""
        head = [f"{method} {path} HTTP/1.1", f"Host: {self.host}:{self.port}", f"Content-Length: {len(payload)}"]
        if body is not None:
            head.append("Content-Type: application/json")
        head += [f"{name}: {value}" for name, value in headers.items()]
        message = ("\r\n".join(head) + "\r\n\r\n").encode() + payload
        reused = self._sock is not None
        try:
            return self._exchange(message)
        except (ConnectionLost, OSError) as exc:
            self.close()
            if not reused or (isinstance(exc, ConnectionLost) and exc.answered):
                raise
        self.reconnects += 1
        return self._exchange(message)

    def _exchange(self, message: bytes) -> tuple[int, bytes]:
        if self._sock is None:
            self._sock = gsocket.create_connection((self.host, self.port), timeout=self.timeout_s)
            self._sock.setsockopt(gsocket.IPPROTO_TCP, gsocket.TCP_NODELAY, 1)
        self._sock.sendall(message)
        while HEADER_END not in self._buffer:
            self._fill(answered=bool(self._buffer))
        head, self._buffer = self._buffer.split(HEADER_END, 1)
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        if headers.get("transfer-encoding", "").lower() == "chunked":
            content = self._read_chunked()
        elif "content-length" in headers:
            content = self._read_exactly(int(headers["content-length"]))
        else:
            content = self._read_to_end()
        if headers.get("connection", "").lower() == "close":
            self.close()
        return status, content

    def _fill(self, answered: bool = True) -> None:
        data = self._sock.recv(RECV_BYTES)
        if not data:
            raise ConnectionLost(answered)
        self._buffer += data

    def _read_exactly(self, size: int) -> bytes:
        while len(self._buffer) < size:
            self._fill()
        content, self._buffer = self._buffer[:size], self._buffer[size:]
        return content

    def _read_line(self) -> bytes:
        while b"\r\n" not in self._buffer:
            self._fill()
        line, self._buffer = self._buffer.split(b"\r\n", 1)
        return line

    def _read_chunked(self) -> bytes:
        parts = []
        while True:
            size = int(self._read_line().split(b";", 1)[0], 16)
            if size == 0:
                while self._read_line():  # trailers, then the empty line
                    pass
                return b"".join(parts)
            parts.append(self._read_exactly(size))
            self._read_exactly(2)

    def _read_to_end(self) -> bytes:
        try:
            while True:
                self._fill()
        except ConnectionLost:
            content, self._buffer = self._buffer, b""
            self.close()
            return content
