"""Addresses and networks in timeout: parsing a moderator's `ipaddr`, and matching a client's address in a time
bounded by the number of distinct prefix lengths in timeout (at most 33 for IPv4, 129 for IPv6), whatever the
number of entries.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass, field

from horde import errors

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

#: The widest networks a moderator may time out: a mistyped /1 would lock out half the Internet.
MIN_PREFIX_BY_VERSION = {4: 8, 6: 32}
#: A worker's IPv6 address is blocked with its /64, where one host usually holds many addresses (the AI Horde's
#: rule); an IPv4 address alone.
WORKER_PREFIX_BY_VERSION = {4: 32, 6: 64}
MAX_ADDRESS_TEXT_CHARS = 50


def parse_network(text: object, *, param: str = "ipaddr") -> IPNetwork:
    """An address ("203.0.113.7", "2001:db8::1") or a network in CIDR ("203.0.113.0/24"); host bits set in a
    network are cleared. 400 BadRequest for anything else, or a network wider than MIN_PREFIX_BY_VERSION."""
    if not isinstance(text, str) or not text.strip() or len(text) > MAX_ADDRESS_TEXT_CHARS:
        raise errors.BadRequest("Invalid IP Address: an IPv4 or IPv6 address, or a network in CIDR.", param=param)
    try:
        network = ipaddress.ip_network(text.strip(), strict=False)
    except ValueError:
        raise errors.BadRequest(
            f"Invalid IP Address '{text}': an IPv4 or IPv6 address, or a network in CIDR.", param=param
        ) from None
    network = _unmapped(network)
    widest = MIN_PREFIX_BY_VERSION[network.version]
    if network.prefixlen < widest:
        raise errors.BadRequest(
            f"The network {network} is too wide: IPv{network.version} networks of /{widest} or narrower.", param=param
        )
    return network


def _unmapped(network: IPNetwork) -> IPNetwork:
    """An IPv4 address written as IPv6 (::ffff:203.0.113.7) is its IPv4 address: clients reach the server either way."""
    if isinstance(network, ipaddress.IPv6Network) and network.network_address.ipv4_mapped and network.prefixlen >= 96:
        return ipaddress.IPv4Network((network.network_address.ipv4_mapped, network.prefixlen - 96))
    return network


def parse_address(text: str) -> IPAddress | None:
    """A client's address as the rate limit reads it (horde/http/client_address.py), or None when it is not one."""
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
        return address.ipv4_mapped
    return address


def worker_network(address: str) -> IPNetwork | None:
    """The network a worker's block covers: its IPv4 address, or its IPv6 address's /64."""
    parsed = parse_address(address)
    if parsed is None:
        return None
    return ipaddress.ip_network((parsed, WORKER_PREFIX_BY_VERSION[parsed.version]), strict=False)


def shown(network: str | IPNetwork) -> str:
    """How a timeout's network reads in answers: an address alone without its /32 or /128, as the AI Horde shows it."""
    parsed = ipaddress.ip_network(network) if isinstance(network, str) else network
    return str(parsed.network_address) if parsed.prefixlen == parsed.max_prefixlen else str(parsed)


@dataclass
class Matcher:
    """The networks in timeout with their expiry (seconds since the epoch), indexed by version and prefix length:
    an address is looked up once per prefix length present, as its network of that length."""

    _by_prefix: dict[tuple[int, int], dict[int, float]] = field(default_factory=dict)

    @classmethod
    def of(cls, entries: Iterable[tuple[str, float]]) -> Matcher:
        matcher = cls()
        for network_text, expires in entries:
            network = ipaddress.ip_network(network_text)
            key = (network.version, network.prefixlen)
            matcher._by_prefix.setdefault(key, {})[int(network.network_address)] = expires
        return matcher

    def __bool__(self) -> bool:
        return bool(self._by_prefix)

    def expiry(self, address: IPAddress, now: float) -> float | None:
        """The latest expiry among the unexpired timeouts that cover `address`, or None."""
        found = None
        value, bits = int(address), address.max_prefixlen
        for (version, prefix), networks in self._by_prefix.items():
            if version != address.version:
                continue
            expires = networks.get(value >> (bits - prefix) << (bits - prefix))
            if expires is not None and expires > now and (found is None or expires > found):
                found = expires
        return found
