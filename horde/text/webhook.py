"""The `webhook` of a text request: a POST after each delivered generation, behind the image fetch's SSRF guard.

The host is resolved once per call and every address must be public (or allowed by
HORDE_IMAGE_FETCH_ALLOW), as for image URLs (horde/chat/image_fetch.py); the POST goes to
one of those checked addresses, so a resolver that answers differently a moment later
is never asked again.
"""

from __future__ import annotations

import http.client
import json
import logging
import socket
import ssl
import threading
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from horde import errors
from horde.chat.image_fetch import checked_addresses

if TYPE_CHECKING:
    from horde.config import Settings

log = logging.getLogger(__name__)
WEBHOOK_TIMEOUT_S = 5.0


def check(url: str, settings: Settings) -> list[tuple]:
    """The webhook's checked addresses; a webhook the Horde would never call is 400 at admission."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise errors.BadRequest("The webhook must be an http or https URL.", param="webhook")
    try:
        return checked_addresses(parts.hostname or "", _port(url), "webhook", settings.image_fetch_allow)
    except errors.HordeError as refusal:
        wording = refusal.message.replace("The image URL's host", "its host").replace("The image host", "its host")
        wording = wording.replace("The image URL", "it").replace(
            "the Horde does not fetch it", "the Horde does not call it"
        )
        raise errors.BadRequest(f"The webhook cannot be called: {wording}", param="webhook") from None


def _port(url: str) -> int:
    parts = urlsplit(url)
    return parts.port or (443 if parts.scheme == "https" else 80)


def send(url: str, body: dict, settings: Settings) -> threading.Thread:
    """POST `body` to `url` in the background."""
    thread = threading.Thread(target=_post, args=(url, body, settings), name="text-webhook", daemon=True)
    thread.start()
    return thread


def _post(url: str, body: dict, settings: Settings) -> None:
    try:
        addresses = check(url, settings)
        parts = urlsplit(url)
        host = parts.hostname or ""
        connection = http.client.HTTPConnection(host, _port(url), timeout=WEBHOOK_TIMEOUT_S)
        sock = socket.create_connection(addresses[0][1][:2], timeout=WEBHOOK_TIMEOUT_S)
        if parts.scheme == "https":
            sock = ssl.create_default_context().wrap_socket(sock, server_hostname=host)
        connection.sock = sock
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        connection.request("POST", path, body=json.dumps(body), headers={"Content-Type": "application/json"})
        connection.getresponse().read()
        connection.close()
    except (errors.HordeError, OSError, http.client.HTTPException) as failure:
        log.warning("text webhook %s not delivered: %s", url, failure)
