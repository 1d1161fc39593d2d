"""Images in user messages: decode data: URLs, fetch http(s) URLs once, store them inline.

Fetching (horde/chat/image_fetch.py) refuses loopback, private, link-local and
other non-public addresses unless HORDE_IMAGE_FETCH_ALLOW names the host or
network (tests use it); each redirect hop is checked again, at most 3, all
within one deadline. Each image is capped at HORDE_IMAGE_MAX_BYTES, and the
images of one request together at HORDE_IMAGE_MAX_BYTES_TOTAL: the part that
crosses it is refused with 400 before anything is queued.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterator

from horde import errors
from horde.chat.image_fetch import ALLOWED_MIME_PREFIX, FetchLimits
from horde.chat.image_fetch import fetch as fetch_image
from horde.config import Settings
from horde.cooperative import pause_every


def copy_for_inlining(messages: list[dict]) -> list[dict]:
    """The messages, with a copy of each one that has image parts: inlining rewrites those in place.

    The caller's messages stay untouched, and the others are shared rather than copied.
    """
    return [_copy_with_parts(message) if _has_image_part(message) else message for message in pause_every(messages)]


def _has_image_part(message: dict) -> bool:
    content = message.get("content")
    return isinstance(content, list) and any(
        isinstance(part, dict) and part.get("type") == "image_url" for part in content
    )


def _copy_with_parts(message: dict) -> dict:
    return dict(message, content=[dict(part) if isinstance(part, dict) else part for part in message["content"]])


def image_parts(messages: list[dict]) -> Iterator[tuple[int, int, dict]]:
    """(message index, part index, part) of every image_url part, in order."""
    for index, message in enumerate(messages):
        content = message.get("content")
        if not isinstance(content, list):
            continue
        for part_index, part in enumerate(content):
            if isinstance(part, dict) and part.get("type") == "image_url":
                yield index, part_index, part


def check_count(messages: list[dict], limit: int) -> None:
    """Refuse more than `limit` images (HORDE_MAX_IMAGES_PER_REQUEST) before any is decoded or fetched.

    Each image is priced a flat 5 kudos and costs a fetch, so their number is bounded like every other size.
    """
    for seen, (index, part_index, _) in enumerate(image_parts(messages), start=1):
        if seen > limit:
            raise errors.UnsupportedChatParameter(
                f"A request may carry at most {limit} images; this one has more. Send fewer images.",
                param=f"messages[{index}].content[{part_index}]",
            )


def inline_images(messages: list[dict], settings: Settings) -> int:
    """Replace every image URL by a data: URL in place; return how many images there are."""
    count, total_bytes = 0, 0
    for index, part_index, part in image_parts(messages):
        part_param = f"messages[{index}].content[{part_index}]"
        url = _image_url(part, part_param)
        left = settings.max_image_bytes_total - total_bytes
        mime, data = _load(url, f"{part_param}.image_url.url", settings, left, part_param)
        total_bytes += len(data)
        part["image_url"] = dict(part["image_url"], url=f"data:{mime};base64,{base64.b64encode(data).decode()}")
        count += 1
    return count


def _image_url(part: dict, part_param: str) -> str:
    image = part.get("image_url")
    if not isinstance(image, dict):
        raise errors.BadRequest("'image_url' must be an object with a string 'url'.", param=f"{part_param}.image_url")
    url = image.get("url")
    if not isinstance(url, str) or not url:
        raise errors.BadRequest("'image_url.url' must be a non-empty string.", param=f"{part_param}.image_url.url")
    return url


def _load(url: str, param: str, settings, left_bytes: int, part_param: str) -> tuple[str, bytes]:
    """The image's type and bytes, refused where it would take the request's images over their total."""
    scheme = url.split(":", 1)[0].lower()
    cap = min(settings.image_max_bytes, left_bytes)
    try:
        if scheme == "data":
            return decode_data_url(url, param, cap)
        if scheme in ("http", "https"):
            return fetch_image(url, param, FetchLimits(settings.image_fetch_timeout_s, cap, settings.image_fetch_allow))
    except errors.ImageTooLarge:
        if cap < settings.image_max_bytes:
            raise errors.UnsupportedChatParameter(
                f"The images of the request together are larger than {settings.max_image_bytes_total} bytes; this "
                "image crosses the limit.",
                param=part_param,
                metadata={"max_image_bytes_total": settings.max_image_bytes_total},
            ) from None
        raise
    raise errors.BadRequest("An image URL must be a data: URL or an http(s) URL.", param=param)


def decode_data_url(url: str, param: str, max_bytes: int) -> tuple[str, bytes]:
    header, _, payload = url[len("data:") :].partition(",")
    mime, _, encoding = header.lower().partition(";")
    if not mime.startswith(ALLOWED_MIME_PREFIX) or encoding != "base64":
        raise errors.BadRequest("A data: image URL must be data:image/<type>;base64,<data>.", param=param)
    if len(payload) * 3 // 4 > max_bytes + 2:  # refused before decoding
        raise errors.ImageTooLarge(f"The image is larger than {max_bytes} bytes.", param=param)
    try:
        data = base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError):
        raise errors.BadRequest("The data: image URL does not hold valid base64.", param=param) from None
    if len(data) > max_bytes:
        raise errors.ImageTooLarge(f"The image is larger than {max_bytes} bytes.", param=param)
    return mime, data
