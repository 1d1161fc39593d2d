"""HTTP to an OpenAI-compatible server (llama.cpp, vLLM, Ollama, koboldcpp): URLs, errors.

One place knows how these servers spell their errors, so a fault reason always
carries the backend's own message ("backend error: HTTP 400: ...").
"""

from __future__ import annotations

import threading
from typing import Any

import requests

TRANSIENT_STATUSES = (502, 503, 504)
ERROR_MESSAGE_MAX_CHARS = 500


class BackendHTTPError(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(f"HTTP {status}: {message}")
        self.status, self.message = status, message

    @property
    def transient(self) -> bool:
        """A busy or restarting server (koboldcpp answers 503 when busy): worth a retry."""
        return self.status in TRANSIENT_STATUSES


def error_message(response: requests.Response) -> str:
    """The server's own words: OpenAI/llama.cpp `error.message`, FastAPI `detail`, Ollama `error`."""
    try:
        body = response.json()
    except ValueError:
        return (response.text or response.reason or "").strip()[:ERROR_MESSAGE_MAX_CHARS]
    message = body
    if isinstance(body, dict):
        message = body.get("error") or body.get("detail") or body.get("message") or body
        if isinstance(message, dict):
            message = message.get("message") or message.get("msg") or message
        elif isinstance(message, list) and message and isinstance(message[0], dict):
            message = message[0].get("msg") or message[0]
    return str(message)[:ERROR_MESSAGE_MAX_CHARS]


def server_root(url: str) -> str:
    """`http://h:8080/v1/` and `http://h:8080` both give `http://h:8080`."""
    root = url.rstrip("/")
    return root[: -len("/v1")] if root.endswith("/v1") else root


class BackendHTTP:
    """A server root plus its key; one requests session per thread."""

    def __init__(self, url: str, api_key: str | None = None):
        self.root = server_root(url)
        self.api_key = api_key
        self._local = threading.local()

    def session(self) -> requests.Session:
        session = getattr(self._local, "session", None)
        if session is None:
            session = requests.Session()
            if self.api_key:
                session.headers["Authorization"] = f"Bearer {self.api_key}"
            self._local.session = session
        return session

    def get_json(self, path: str, timeout_s: float) -> Any:
        """The JSON at `path`, or None when the server has no such endpoint (detection only)."""
        try:
            response = self.session().get(self.root + path, timeout=timeout_s)
            return response.json() if response.ok else None
        except (requests.RequestException, ValueError):
            return None

    def post_json(self, path: str, body: dict, timeout: float | tuple[float, float]) -> dict:
        response = self.session().post(self.root + path, json=body, timeout=timeout)
        if not response.ok:
            raise BackendHTTPError(response.status_code, error_message(response))
        try:
            return response.json()
        except ValueError:
            raise BackendHTTPError(response.status_code, "the answer is not JSON") from None

    def open_stream(self, path: str, body: dict, timeout: float | tuple[float, float]) -> requests.Response:
        """A streaming POST; the caller reads `iter_lines()` and must `close()` it.

        `Connection: close`: llama.cpp's server closes the connection after a stream, and a pooled
        connection reused after that fails with RemoteDisconnected.
        """
        response = self.session().post(
            self.root + path, json=body, timeout=timeout, stream=True, headers={"Connection": "close"}
        )
        if not response.ok:
            try:
                raise BackendHTTPError(response.status_code, error_message(response))
            finally:
                response.close()
        return response
