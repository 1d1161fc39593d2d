"""The caller's network address, for limits that apply per client rather than per API key.

Behind proxies, each proxy appends the address it received the call from to
X-Forwarded-For. Only the last HORDE_TRUSTED_PROXY_HOPS of those hops were
written by our own proxies; anything left of them is the client's word and is
never trusted (a client could name any address there).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from typing import Any

MAX_ADDRESS_CHARS = 64
UNKNOWN_ADDRESS = "unknown"


def client_address(environ: Mapping[str, Any], trusted_proxy_hops: int) -> str:
    """REMOTE_ADDR, or the address `trusted_proxy_hops` proxies saw, from X-Forwarded-For."""
    remote = environ.get("REMOTE_ADDR") or UNKNOWN_ADDRESS
    if trusted_proxy_hops <= 0:
        return _normalized(remote)
    forwarded = [hop.strip() for hop in (environ.get("HTTP_X_FORWARDED_FOR") or "").split(",") if hop.strip()]
    chain = forwarded + [remote]
    return _normalized(chain[max(len(chain) - 1 - trusted_proxy_hops, 0)])


def _normalized(address: str) -> str:
    try:
        return str(ipaddress.ip_address(address.strip("[]")))
    except ValueError:
        return address[:MAX_ADDRESS_CHARS]
