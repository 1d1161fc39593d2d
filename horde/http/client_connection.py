"""Whether the client of the request in hand has closed its connection: a leaf every long wait reads.

A non-streamed chat call that waits for its reply cancels the request when its client went away, and a worker's
long-poll that was woken for a job does not claim it for a worker that is no longer listening (a stopped
worker's last pop would otherwise hold the job until its ttl). The serving layer puts the client's socket in
the environ (`horde.socket`; gunicorn's own keys too).
"""

from __future__ import annotations

import select
import socket

from flask import has_request_context, request
from gevent.monkey import get_original

CLIENT_SOCKET_KEYS = ("horde.socket", "gunicorn.socket", "gunicorn.sock")
# The operating system's poll, even under gevent's monkey patching: a zero-timeout look needs no greenlet switch,
# and unlike select() it takes descriptors of 1024 and above.
_system_poll = get_original("select", "poll")


def client_gone(environ: dict) -> bool:
    """True when the client closed its connection (EOF readable on its socket)."""
    sock = next((environ[key] for key in CLIENT_SOCKET_KEYS if environ.get(key) is not None), None)
    if sock is None:
        return False
    try:
        poller = _system_poll()
        poller.register(sock.fileno(), select.POLLIN)
        events = poller.poll(0)
        if not events:
            return False
        if events[0][1] & (select.POLLERR | select.POLLNVAL):
            return True
        return sock.recv(1, socket.MSG_PEEK) == b""
    except (OSError, ValueError):
        return True


def requester_gone() -> bool:
    """client_gone for the request in hand; False outside a request (an in-process caller)."""
    return has_request_context() and client_gone(request.environ)
