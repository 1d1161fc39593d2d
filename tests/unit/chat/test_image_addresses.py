"""Which addresses the image fetch may connect to: IPv6 forms are judged by the IPv4 address they carry."""

import ipaddress

import pytest

from horde import errors
from horde.chat.image_fetch import checked_addresses, is_public


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1",
        "10.1.2.3",
        "192.168.0.1",
        "169.254.169.254",
        "100.64.0.1",
        "::1",
        "fe80::1",
        "fc00::1",
        "::ffff:127.0.0.1",
        "::ffff:10.0.0.1",
        "64:ff9b::7f00:1",
        "64:ff9b::a00:1",
        "64:ff9b::a9fe:a9fe",
        "64:ff9b::c0a8:101",  # NAT64 of private IPv4
        "64:ff9b:1::808:808",  # the local-use NAT64 prefix, never public
        "2002:7f00:1::1",
        "2002:a00:1::",
        "2002:a9fe:a9fe::1",
        "2002:c0a8:101::",  # 6to4 of private IPv4
        "224.0.0.1",
        "ff02::1",
    ],
)
def test_non_public_addresses(address):
    assert not is_public(ipaddress.ip_address(address))


@pytest.mark.parametrize(
    "address", ["8.8.8.8", "1.1.1.1", "2606:4700:4700::1111", "64:ff9b::808:808", "2002:808:808::1"]
)
def test_public_addresses(address):
    assert is_public(ipaddress.ip_address(address))


@pytest.mark.parametrize("host", ["64:ff9b::7f00:1", "2002:7f00:1::1"])
def test_literal_nat64_and_6to4_hosts_are_forbidden(host):
    with pytest.raises(errors.ImageUrlForbidden):
        checked_addresses(host, 80, "p", ())


def test_allowed_networks_pass_and_return_the_checked_address():
    assert checked_addresses("127.0.0.1", 8080, "p", ("127.0.0.0/8",)) == [(2, ("127.0.0.1", 8080))]
