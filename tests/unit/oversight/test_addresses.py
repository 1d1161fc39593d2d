"""Addresses and networks in timeout: what a moderator may send, and a lookup that costs one probe per prefix
length in timeout, whatever the number of entries."""

from __future__ import annotations

import ipaddress
import time

import pytest

from horde import errors
from horde.oversight.addresses import Matcher, parse_address, parse_network, shown, worker_network
from horde.oversight.gate import refuse_timed_out
from horde.oversight.view import Snapshot

FAR = time.time() + 3600


@pytest.mark.parametrize(
    ("text", "network"),
    [
        ("203.0.113.7", "203.0.113.7/32"),
        ("203.0.113.77/24", "203.0.113.0/24"),  # host bits cleared, as a moderator means it
        ("2001:db8::1", "2001:db8::1/128"),
        ("2001:db8::/48", "2001:db8::/48"),
        ("::ffff:203.0.113.7", "203.0.113.7/32"),  # an IPv4 address written as IPv6 is the IPv4 address
        (" 10.0.0.0/8 ", "10.0.0.0/8"),
    ],
)
def test_an_address_or_a_network_is_read_as_its_network(text, network):
    assert str(parse_network(text)) == network


@pytest.mark.parametrize("text", ["", "not an address", "300.1.1.1", "10.0.0.0/7", "2001:db8::/31", "1" * 60, 42])
def test_anything_else_or_a_network_too_wide_is_a_bad_request_naming_ipaddr(text):
    with pytest.raises(errors.BadRequest) as refused:
        parse_network(text)
    assert refused.value.param == "ipaddr"


def test_a_client_address_is_matched_by_every_network_that_holds_it_and_by_none_other():
    matcher = Matcher.of([("203.0.113.0/24", FAR), ("198.51.100.9/32", FAR + 10), ("2001:db8:1::/48", FAR)])
    assert matcher.expiry(ipaddress.ip_address("203.0.113.250"), time.time()) == FAR
    assert matcher.expiry(ipaddress.ip_address("198.51.100.9"), time.time()) == FAR + 10
    assert matcher.expiry(ipaddress.ip_address("198.51.100.10"), time.time()) is None
    assert matcher.expiry(ipaddress.ip_address("203.0.114.1"), time.time()) is None
    assert matcher.expiry(ipaddress.ip_address("2001:db8:1:ffff::5"), time.time()) == FAR
    assert matcher.expiry(ipaddress.ip_address("2001:db8:2::5"), time.time()) is None


def test_the_latest_expiry_of_the_covering_networks_counts_and_an_expired_one_counts_for_nothing():
    now = time.time()
    matcher = Matcher.of([("10.1.0.0/16", now - 1), ("10.1.2.0/24", FAR), ("10.1.2.3/32", FAR + 99)])
    assert matcher.expiry(ipaddress.ip_address("10.1.2.3"), now) == FAR + 99
    assert matcher.expiry(ipaddress.ip_address("10.1.9.9"), now) is None  # only the expired /16 holds it


def test_a_lookup_probes_each_prefix_length_once_whatever_the_number_of_entries():
    entries = [(f"10.{index // 256}.{index % 256}.0/24", FAR) for index in range(10_000)]
    matcher = Matcher.of(entries)
    assert len(matcher._by_prefix) == 1  # ten thousand networks, one probe
    assert matcher.expiry(ipaddress.ip_address("10.39.15.200"), time.time()) == FAR
    assert matcher.expiry(ipaddress.ip_address("10.200.0.1"), time.time()) is None


def test_the_refusal_counts_the_seconds_left_and_an_unknown_address_passes():
    snapshot = Snapshot(timeouts=Matcher.of([("203.0.113.7/32", time.time() + 90)]))
    with pytest.raises(errors.TimeoutIP) as refused:
        refuse_timed_out(snapshot, "203.0.113.7")
    assert refused.value.status == 403 and "more seconds" in refused.value.message
    refuse_timed_out(snapshot, "203.0.113.8")
    refuse_timed_out(snapshot, "unknown")  # no address to match (a test client's): nothing to refuse
    long = Snapshot(timeouts=Matcher.of([("203.0.113.7/32", time.time() + 10 * 86400)]))
    with pytest.raises(errors.TimeoutIP) as refused:
        refuse_timed_out(long, "::ffff:203.0.113.7")
    assert "more seconds" not in refused.value.message


def test_a_workers_address_is_blocked_alone_or_with_its_ipv6_64():
    assert str(worker_network("203.0.113.7")) == "203.0.113.7/32"
    assert str(worker_network("2001:db8:1:2:3:4:5:6")) == "2001:db8:1:2::/64"
    assert worker_network("unknown") is None
    assert parse_address("nonsense") is None


def test_an_address_alone_is_shown_without_its_prefix():
    assert shown("203.0.113.7/32") == "203.0.113.7"
    assert shown("203.0.113.0/24") == "203.0.113.0/24"
    assert shown("2001:db8::1/128") == "2001:db8::1"
