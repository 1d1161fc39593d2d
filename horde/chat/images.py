"""Images in user messages: decode data: URLs, fetch http(s) URLs once, store them inline.

Fetching refuses loopback, private, link-local and other non-public addresses
unless HORDE_IMAGE_FETCH_ALLOW names the host or network (tests use it).
Each hop of a redirect is checked again, at most 3 redirects, 2 s timeouts,
and a size cap.
"""

from __future__ import annotations

import base64
import binascii
import ipaddress
import socket
from urllib.parse import urljoin, urlsplit

import requests

from horde import errors
from horde.config import Settings

MAX_REDIRECTS = 3
ALLOWED_MIME_PREFIX = "image/"
FETCH_CHUNK_BYTES = 64 * 1024


def inline_images(messages: list[dict], settings: Settings) -> int:
    """Replace every image URL by a data: URL in place; return how many images there are."""
    count = 0
    for index, message in enumerate(messages):
        content = message.get("content")
        if not isinstance(content, list):
            continue
        for part_index, part in enumerate(content):
            if not isinstance(part, dict) or part.get("type") != "image_url":
                continue
            param = f"messages[{index}].content[{part_index}].image_url.url"
            url = (part.get("image_url") or {}).get("url", "")
            part["image_url"] = dict(part["image_url"], url=_to_data_url(url, param, settings))
            count += 1
    return count


def _to_data_url(url: str, param: str, settings) -> str:
    scheme = url.split(":", 1)[0].lower()
    if scheme == "data":
        mime, data = decode_data_url(url, param, settings.image_max_bytes)
        return f"data:{mime};base64,{base64.b64encode(data).decode()}"
    if scheme in ("http", "https"):
        mime, data = fetch(url, param, settings)
        return f"data:{mime};base64,{base64.b64encode(data).decode()}"
    raise errors.BadRequest("An image URL must be a data: URL or an http(s) URL.", param=param)


def decode_data_url(url: str, param: str, max_bytes: int) -> tuple[str, bytes]:
    header, _, payload = url[len("data:"):].partition(",")
    mime, _, encoding = header.lower().partition(";")
    if not mime.startswith(ALLOWED_MIME_PREFIX) or encoding != "base64":
        raise errors.BadRequest("A data: image URL must be data:image/<type>;base64,<data>.", param=param)
    try:
        data = base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError):
        raise errors.BadRequest("The data: image URL does not hold valid base64.", param=param) from None
    if len(data) > max_bytes:
        raise errors.ImageTooLarge(f"The image is larger than {max_bytes} bytes.", param=param)
    return mime, data


def fetch(url: str, param: str, settings: Settings) -> tuple[str, bytes]:
    for _ in range(MAX_REDIRECTS + 1):
        check_address(url, param, settings.image_fetch_allow)
        try:
            response = requests.get(url, timeout=(settings.image_fetch_timeout_s, settings.image_fetch_timeout_s),
                                    allow_redirects=False, stream=True)
        except requests.RequestException as error:
            raise errors.ImageFetchFailed(f"Fetching the image failed: {type(error).__name__}.", param=param) from None
        with response:
            if response.is_redirect:
                url = urljoin(url, response.headers.get("Location", ""))
                continue
            if response.status_code != 200:
                raise errors.ImageFetchFailed(f"Fetching the image answered HTTP {response.status_code}.", param=param)
            mime = response.headers.get("Content-Type", "").split(";")[0].strip()
            if not mime.startswith(ALLOWED_MIME_PREFIX):
                raise errors.ImageFetchFailed(f"The URL did not answer an image (Content-Type '{mime}').", param=param)
            return mime, _read_capped(response, param, settings.image_max_bytes)
    raise errors.ImageFetchFailed(f"The image URL redirected more than {MAX_REDIRECTS} times.", param=param)


def _read_capped(response, param: str, max_bytes: int) -> bytes:
    chunks, size = [], 0
    for chunk in response.iter_content(FETCH_CHUNK_BYTES):
        size += len(chunk)
        if size > max_bytes:
            raise errors.ImageTooLarge(f"The image is larger than {max_bytes} bytes.", param=param)
        chunks.append(chunk)
    return b"".join(chunks)


def check_address(url: str, param: str, allow: tuple[str, ...]) -> None:
    """Refuse URLs whose host resolves to a non-public address, unless allowed."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if not host:
        raise errors.BadRequest("The image URL has no host.", param=param)
    if host in allow:
        return
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError):
        raise errors.ImageFetchFailed(f"The image host '{host}' does not resolve.", param=param) from None
    for info in infos:
        address = ipaddress.ip_address(str(info[4][0]).split("%")[0])
        if _allowed_network(address, allow):
            continue
        if not address.is_global or address.is_multicast:
            raise errors.ImageUrlForbidden(
                f"The image URL's host '{host}' resolves to a non-public address ({address}); "
                "the Horde does not fetch it.",
                param=param)


def _allowed_network(address, allow: tuple[str, ...]) -> bool:
    for entry in allow:
        try:
            if address in ipaddress.ip_network(entry, strict=False):
                return True
        except ValueError:
            continue
    return False
