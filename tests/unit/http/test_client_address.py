"""Which address a call comes from, with and without trusted proxies."""

import pytest

from horde.http.client_address import client_address


@pytest.mark.parametrize(
    "forwarded, hops, expected",
    [
        (None, 0, "192.0.2.1"),
        ("203.0.113.7", 0, "192.0.2.1"),
        ("203.0.113.7", 1, "203.0.113.7"),
        ("6.6.6.6, 203.0.113.7", 1, "203.0.113.7"),
        ("6.6.6.6, 203.0.113.7, 10.0.0.2", 2, "203.0.113.7"),
        ("203.0.113.7", 3, "203.0.113.7"),  # fewer hops than trusted: the first one there is
        (None, 1, "192.0.2.1"),
        (" 2001:DB8::1 ", 1, "2001:db8::1"),
    ],
)
def test_client_address(forwarded, hops, expected):
    environ = {"REMOTE_ADDR": "192.0.2.1"}
    if forwarded is not None:
        environ["HTTP_X_FORWARDED_FOR"] = forwarded
    assert client_address(environ, hops) == expected
