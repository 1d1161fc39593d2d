"""The `webhook` of a text request: a POST after each delivered generation, behind the image fetch's SSRF guard."""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import requests

from horde import errors
from horde.chat.images import check_address

if TYPE_CHECKING:
    from horde.config import Settings


log = logging.getLogger(__name__)
WEBHOOK_TIMEOUT_S = 5.0


def check(url: str, settings: Settings) -> None:
    """Refuse at admission a webhook the Horde would never call: not http(s), or a non-public address."""
    if urlsplit(url).scheme not in ("http", "https"):
        raise errors.BadRequest("The webhook must be an http or https URL.", param="webhook")
    try:
        check_address(url, "webhook", settings.image_fetch_allow)
    except errors.HordeError as refusal:
        raise errors.BadRequest(
            f"The webhook cannot be called: {_webhook_wording(refusal.message)}", param="webhook"
        ) from None


def _webhook_wording(message: str) -> str:
    return (
        message.replace("The image URL's host", "its host")
        .replace("The image host", "its host")
        .replace("The image URL", "it")
        .replace("the Horde does not fetch it", "the Horde does not call it")
    )


def send(url: str, body: dict, settings: Settings) -> threading.Thread:
    """POST `body` to `url` in the background; the address is checked again at call time (DNS may change)."""
    thread = threading.Thread(target=_post, args=(url, body, settings), name="text-webhook", daemon=True)
    thread.start()
    return thread


def _post(url: str, body: dict, settings) -> None:
    try:
        check(url, settings)
        requests.post(url, json=body, timeout=WEBHOOK_TIMEOUT_S, allow_redirects=False)
    except (errors.HordeError, requests.RequestException) as failure:
        log.warning("text webhook %s not delivered: %s", url, failure)
