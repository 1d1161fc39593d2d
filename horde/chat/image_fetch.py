"""Fetching one image URL safely: one resolution, public addresses only, one deadline.

- The host is resolved once; every address it resolves to must be public (or
  allowed by HORDE_IMAGE_FETCH_ALLOW), and the connection goes to one of those
  checked addresses, with the Host header and TLS server name of the URL. A
  resolver that answers differently a moment later (DNS rebinding) is never asked
  again.
- IPv6 forms that carry an IPv4 address (IPv4-mapped, NAT64 64:ff9b::/96, 6to4
  2002::/16, Teredo) are judged by the IPv4 address they carry; the local-use
  NAT64 prefix 64:ff9b:1::/48 is refused.
- One deadline (2 s, Settings.image_fetch_timeout_s) covers the whole fetch, from
  resolution to the last byte and across redirects: a server that trickles bytes
  is cut off when it passes, whatever the pace of each read.
"""

from __future__ import annotations

import http.client
import ipaddress
import socket
import ssl
import threading
import time
from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit

from horde import errors

MAX_REDIRECTS = 3
ALLOWED_MIME_PREFIX = "image/"
FETCH_CHUNK_BYTES = 64 * 1024
REDIRECT_STATUSES = (301, 302, 303, 307, 308)
NAT64_NETWORK = ipaddress.ip_network("64:ff9b::/96")
LOCAL_NAT64_NETWORK = ipaddress.ip_network("64:ff9b:1::/48")
USER_AGENT = "horde-image-fetch/1"


@dataclass(frozen=True)
class FetchLimits:
    """What one fetch may take: seconds in all, bytes for this image, bytes left for the request."""

    timeout_s: float
    max_bytes: int
    allow: tuple[str, ...]


class _Deadline:
    """Shuts the socket down when the fetch's time is up, which ends any read waiting on it."""

    def __init__(self, timeout_s: float):
        self.expires_at = time.monotonic() + timeout_s
        self.expired = False
        self._sock: socket.socket | None = None
        self._timer: threading.Timer | None = None

    def remaining_s(self) -> float:
        left = self.expires_at - time.monotonic()
        if left <= 0:
            self.expired = True
        return max(left, 0.0)

    def guard(self, sock: socket.socket) -> None:
        self.release()
        self._sock = sock
        self._timer = threading.Timer(self.remaining_s(), self._expire)
        self._timer.daemon = True
        self._timer.start()

    def _expire(self) -> None:
        self.expired = True
        try:
            if self._sock is not None:
                self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def release(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None


def fetch(url: str, param: str, limits: FetchLimits) -> tuple[str, bytes]:
    """The image's MIME type and bytes, or a HordeError naming `param`."""
    deadline = _Deadline(limits.timeout_s)
    try:
        for _ in range(MAX_REDIRECTS + 1):
            result = _fetch_once(url, param, limits, deadline)
            if isinstance(result, str):
                url = result
                continue
            return result
    except (OSError, http.client.HTTPException, ValueError) as error:
        if deadline.expired or isinstance(error, TimeoutError):
            raise _timed_out(limits, param) from None
        raise errors.ImageFetchFailed(f"Fetching the image failed: {type(error).__name__}.", param=param) from None
    finally:
        deadline.release()
    raise errors.ImageFetchFailed(f"The image URL redirected more than {MAX_REDIRECTS} times.", param=param)


def _timed_out(limits: FetchLimits, param: str) -> errors.HordeError:
    return errors.ImageFetchFailed(f"Fetching the image took longer than {limits.timeout_s:g} s.", param=param)


def _fetch_once(url: str, param: str, limits: FetchLimits, deadline: _Deadline):
    """The (mime, bytes) of a 200 answer, or the next URL of a redirect."""
    parts = urlsplit(url)
    if parts.scheme.lower() not in ("http", "https"):
        raise errors.ImageFetchFailed("An image URL may only redirect to an http(s) URL.", param=param)
    host = parts.hostname or ""
    port = parts.port or (443 if parts.scheme.lower() == "https" else 80)
    addresses = checked_addresses(host, port, param, limits.allow)
    sock = _connect(addresses, port, deadline)
    deadline.guard(sock)
    if parts.scheme.lower() == "https":
        sock = ssl.create_default_context().wrap_socket(sock, server_hostname=host)
    connection = http.client.HTTPConnection(host, port, timeout=deadline.remaining_s())
    connection.sock = sock
    try:
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        connection.request("GET", path, headers={"User-Agent": USER_AGENT, "Accept": "image/*"})
        response = connection.getresponse()
        if response.status in REDIRECT_STATUSES:
            return urljoin(url, response.getheader("Location", ""))
        if response.status != 200:
            raise errors.ImageFetchFailed(f"Fetching the image answered HTTP {response.status}.", param=param)
        mime = (response.getheader("Content-Type") or "").split(";")[0].strip()
        if not mime.startswith(ALLOWED_MIME_PREFIX):
            raise errors.ImageFetchFailed(f"The URL did not answer an image (Content-Type '{mime}').", param=param)
        return mime, _read_capped(response, param, limits, deadline)
    finally:
        connection.close()


def _connect(addresses: list[tuple], port: int, deadline: _Deadline) -> socket.socket:
    last_error: OSError = ConnectionError("no address")
    for family, sockaddr in addresses:
        remaining = deadline.remaining_s()
        if remaining <= 0:
            raise TimeoutError("image fetch deadline")
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.settimeout(remaining)
        try:
            sock.connect(sockaddr)
            return sock
        except OSError as error:
            sock.close()
            last_error = error
    raise last_error


def _read_capped(response, param: str, limits: FetchLimits, deadline: _Deadline) -> bytes:
    chunks, size = [], 0
    while True:
        chunk = response.read(FETCH_CHUNK_BYTES)
        if deadline.expired:
            raise TimeoutError("image fetch deadline")
        if not chunk:
            break
        size += len(chunk)
        if size > limits.max_bytes:
            raise errors.ImageTooLarge(f"The image is larger than {limits.max_bytes} bytes.", param=param)
        chunks.append(chunk)
    if response.length:  # the server closed before the Content-Length it announced (or the deadline cut it)
        raise http.client.IncompleteRead(b"".join(chunks), response.length)
    return b"".join(chunks)


def checked_addresses(host: str, port: int, param: str, allow: tuple[str, ...]) -> list[tuple]:
    """(family, sockaddr) for each address of `host`, after refusing any non-public one that is not allowed."""
    if not host:
        raise errors.BadRequest("The image URL has no host.", param=param)
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError):
        raise errors.ImageFetchFailed(f"The image host '{host}' does not resolve.", param=param) from None
    addresses = []
    for family, _, _, _, sockaddr in infos:
        address = ipaddress.ip_address(str(sockaddr[0]).split("%")[0])
        if host not in allow and not _allowed_network(address, allow) and not is_public(address):
            raise errors.ImageUrlForbidden(
                f"The image URL's host '{host}' resolves to a non-public address ({address}); the Horde does not "
                "fetch it.",
                param=param,
            )
        addresses.append((family, sockaddr))
    return addresses


def is_public(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    """Whether `address`, and any IPv4 address it carries, is a global unicast address."""
    if address.is_multicast or not address.is_global:
        return False
    if isinstance(address, ipaddress.IPv6Address):
        if address in LOCAL_NAT64_NETWORK:
            return False
        carried = [address.ipv4_mapped, address.sixtofour]
        if address.teredo:
            carried += list(address.teredo)
        if address in NAT64_NETWORK:
            carried.append(ipaddress.IPv4Address(int(address) & 0xFFFFFFFF))
        return all(is_public(inner) for inner in carried if inner is not None)
    return True


def _allowed_network(address, allow: tuple[str, ...]) -> bool:
    for entry in allow:
        try:
            if address in ipaddress.ip_network(entry, strict=False):
                return True
        except ValueError:
            continue
    return False
