"""The WSGI environ of a request h11 read (PEP 3333), with the client socket under `horde.socket`.

The front reads `horde.socket` to notice a client that closed its connection while its non-streamed request
waits (horde/oai/chat.py). A header whose name holds an underscore is dropped, as gevent and nginx drop it:
once dashes become underscores it could pass for another (`X_Forwarded_For` for `X-Forwarded-For`).
"""

from __future__ import annotations

import socket
from typing import Any
from urllib.parse import unquote_to_bytes

import h11

SOCKET_ENVIRON_KEY = "horde.socket"
#: Header fields the environ carries under CGI's names, not as HTTP_ keys.
_CGI_KEYS = {"CONTENT_TYPE", "CONTENT_LENGTH"}
_ABSOLUTE_FORM_PREFIXES = (b"http://", b"https://")
#: Environ keys of header names already seen, as sent: most requests repeat a few names.
_keys: dict[bytes, str | None] = {}
_KEYS_REMEMBERED_MAX = 512


def base_environ(listener_address: Any, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """The keys every request of a listener shares."""
    if isinstance(listener_address, tuple):
        host, port = str(listener_address[0]), str(listener_address[1])
    else:  # a unix socket
        host, port = str(listener_address), ""
    environ = {
        "SCRIPT_NAME": "",
        "SERVER_NAME": host,
        "SERVER_PORT": port,
        "wsgi.version": (1, 0),
        "wsgi.url_scheme": "http",
        "wsgi.multithread": False,
        "wsgi.multiprocess": False,
        "wsgi.run_once": False,
        # The input ends where the body ends, chunked or not: werkzeug reads it without a length of its own.
        "wsgi.input_terminated": True,
    }
    environ.update(extra or {})
    return environ


def header_key(name: bytes) -> str | None:
    """The environ key of a header name (h11 let only tokens through); None for a name with an underscore."""
    key = _keys.get(name, "")
    if key == "":
        if b"_" in name:
            key = None
        else:
            key = name.decode("ascii").upper().replace("-", "_")
            key = key if key in _CGI_KEYS else "HTTP_" + key
        if len(_keys) < _KEYS_REMEMBERED_MAX:
            _keys[name] = key
    return key


def build(request: h11.Request, base: dict[str, Any], sock: socket.socket, peer: Any) -> dict[str, Any]:
    """The environ of `request`, without wsgi.input (the connection adds its body)."""
    environ = base.copy()
    target = request.target
    if target.startswith(_ABSOLUTE_FORM_PREFIXES):  # absolute-form: http://host/path?query
        target = b"/" + target.split(b"/", 3)[3] if target.count(b"/") >= 3 else b"/"
    path, _, query = target.partition(b"?")
    environ["REQUEST_METHOD"] = request.method.decode("ascii")
    environ["PATH_INFO"] = (unquote_to_bytes(path) if b"%" in path else path).decode("latin-1")
    environ["QUERY_STRING"] = query.decode("latin-1")
    environ["RAW_URI"] = environ["REQUEST_URI"] = request.target.decode("latin-1")
    environ["SERVER_PROTOCOL"] = "HTTP/1.1" if request.http_version == b"1.1" else "HTTP/1.0"
    if isinstance(peer, tuple):
        environ["REMOTE_ADDR"] = peer[0]
        environ["REMOTE_PORT"] = str(peer[1])
    else:
        environ["REMOTE_ADDR"] = ""
    environ[SOCKET_ENVIRON_KEY] = sock
    for name, value in request.headers.raw_items():  # a list (iterating h11's Headers costs a call an item)
        key = header_key(name)
        if key is None:
            continue
        text = value.decode("latin-1")
        if key in environ:
            environ[key] += "," + text
        else:
            environ[key] = text
    return environ


def has_body(environ: dict[str, Any]) -> bool:
    """Whether a body follows the head (h11 refused any other framing than these two)."""
    return "HTTP_TRANSFER_ENCODING" in environ or environ.get("CONTENT_LENGTH", "0") != "0"


def asks_to_close(environ: dict[str, Any]) -> bool:
    """Whether the request's Connection header names `close` (RFC 9112 section 9.6)."""
    connection = environ.get("HTTP_CONNECTION")
    return connection is not None and "close" in (token.strip().lower() for token in connection.split(","))
