"""The front's view of the caller: Bearer key and the composed Client-Agent."""

from __future__ import annotations

from urllib.parse import urlsplit

from werkzeug.datastructures import Headers

from horde import errors
from horde.accounts.keys import ANONYMOUS_API_KEY

CLIENT_AGENT_SUFFIX = "via horde-oai-front"
UNKNOWN = "unknown"
MAX_PART_CHARS = 100


def bearer_key(headers: Headers) -> str:
    """The API key of `Authorization: Bearer <key>`; none is anonymous; any other shape is 401."""
    value = headers.get("Authorization")
    if value is None:
        return ANONYMOUS_API_KEY
    scheme, _, key = value.strip().partition(" ")
    key = key.strip()
    if scheme.lower() != "bearer" or not key or " " in key:
        raise errors.InvalidAuthorizationHeader("The Authorization header must be 'Bearer <key>'.")
    return key


def client_agent(headers: Headers) -> str:
    """<application>:<version>:<user agent> via horde-oai-front, from the caller's headers."""
    application = (
        headers.get("X-Title")
        or headers.get("X-OpenRouter-Title")
        or _host(headers.get("HTTP-Referer"))
        or _host(headers.get("Referer"))
        or UNKNOWN
    )
    user_agent = headers.get("User-Agent") or UNKNOWN
    return f"{_clean(application)}:{UNKNOWN}:{_clean(user_agent)} {CLIENT_AGENT_SUFFIX}"


def _host(url: str | None) -> str | None:
    if not url:
        return None
    try:
        return urlsplit(url if "//" in url else "//" + url).hostname
    except ValueError:
        return None


def _clean(part: str) -> str:
    return part.replace(":", "_").strip()[:MAX_PART_CHARS]
